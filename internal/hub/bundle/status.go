package bundle

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// WorkState is what one Work says about its cluster, for counting.
type WorkState struct {
	// Current: the agent acted on this generation and applied the revision asked for.
	Current   bool
	Applied   bool
	Available bool
	Failed    bool
	Drifted   bool
	// Reason for a failure, from the Applied or Available condition.
	Reason string
}

// StateOf reads a Work's conditions. A Work the agent has not yet acted on is neither
// applied nor failed: it is pending.
func StateOf(w *flv1.Work) WorkState {
	var s WorkState
	s.Current = w.Status.ObservedGeneration == w.Generation && w.Status.AppliedRevision == w.Spec.Revision
	applied := meta.FindStatusCondition(w.Status.Conditions, flv1.ConditionApplied)
	avail := meta.FindStatusCondition(w.Status.Conditions, flv1.ConditionAvailable)
	drift := meta.FindStatusCondition(w.Status.Conditions, flv1.ConditionDrifted)
	s.Drifted = drift != nil && drift.Status == metav1.ConditionTrue
	if applied == nil || applied.ObservedGeneration != w.Generation {
		return s
	}
	if applied.Status == metav1.ConditionFalse {
		s.Failed, s.Reason = true, applied.Message
		return s
	}
	s.Applied = s.Current && applied.Status == metav1.ConditionTrue
	if s.Applied && avail != nil && avail.ObservedGeneration == w.Generation {
		switch {
		case avail.Status == metav1.ConditionTrue:
			s.Available = true
		case avail.Reason == flv1.ReasonResourcesFailed:
			s.Failed, s.Reason = true, avail.Message
		}
	}
	return s
}

// aggregate computes a Bundle's counts from its Works. unreachable holds the clusters whose
// heartbeat is stale. It returns the first failures ("cluster: reason"), at most max.
func aggregate(st *flv1.BundleStatus, works []flv1.Work, unreachable map[string]bool, max int) []string {
	byRev := map[string]*flv1.RevisionCounts{}
	var failures []string
	st.Targeted, st.Applied, st.Available, st.Failed, st.Drifted, st.Unreachable = 0, 0, 0, 0, 0, 0
	for i := range works {
		w := &works[i]
		c := byRev[w.Spec.Revision]
		if c == nil {
			c = &flv1.RevisionCounts{Revision: w.Spec.Revision}
			byRev[w.Spec.Revision] = c
		}
		s := StateOf(w)
		cluster := w.Labels[flv1.LabelCluster]
		c.Clusters++
		if s.Applied {
			c.Applied++
		}
		if s.Available {
			c.Available++
		}
		if s.Failed {
			c.Failed++
			if w.Spec.Revision == st.Revision && len(failures) < max {
				failures = append(failures, fmt.Sprintf("%s: %s", cluster, s.Reason))
			}
		}
		if s.Drifted {
			c.Drifted++
		}
		if unreachable[cluster] {
			c.Unreachable++
		}
	}
	st.Revisions = st.Revisions[:0]
	for _, c := range byRev {
		st.Revisions = append(st.Revisions, *c)
		if c.Revision == st.Revision {
			st.Applied, st.Available, st.Failed, st.Drifted, st.Unreachable = c.Applied, c.Available, c.Failed, c.Drifted, c.Unreachable
		}
	}
	sort.Slice(st.Revisions, func(i, j int) bool { return st.Revisions[i].Revision < st.Revisions[j].Revision })
	if len(st.Revisions) == 0 {
		st.Revisions = nil
	}
	st.Targeted = int32(len(works))
	return failures
}

// setReadyCondition says whether the fleet runs the current revision and is healthy.
func setReadyCondition(b *flv1.Bundle, failures []string) {
	st := &b.Status
	c := metav1.Condition{Type: flv1.ConditionReady, ObservedGeneration: b.Generation}
	onRev := int32(0)
	for _, r := range st.Revisions {
		if r.Revision == st.Revision {
			onRev = r.Clusters
		}
	}
	switch {
	case st.Targeted == 0:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, flv1.ReasonNoClusters, "the placement selects no cluster"
	case st.Failed > 0:
		c.Status, c.Reason = metav1.ConditionFalse, flv1.ReasonFailing
		c.Message = fmt.Sprintf("%d of %d clusters failed at %s: %s", st.Failed, st.Targeted, st.Revision, strings.Join(failures, "; "))
	case st.Available == st.Targeted && onRev == st.Targeted:
		c.Status, c.Reason = metav1.ConditionTrue, flv1.ReasonAvailable
		c.Message = fmt.Sprintf("%d of %d clusters available at %s", st.Available, st.Targeted, st.Revision)
	default:
		c.Status, c.Reason = metav1.ConditionFalse, flv1.ReasonProgressing
		c.Message = fmt.Sprintf("%d of %d clusters available at %s, %d applied", st.Available, st.Targeted, st.Revision, st.Applied)
		if st.Unreachable > 0 {
			c.Message += fmt.Sprintf(", %d unreachable", st.Unreachable)
		}
	}
	if ro := st.Rollout; ro != nil && ro.Phase != flv1.PhaseSucceeded && ro.Phase != "" {
		// The fleet is not meant to be at the current revision everywhere yet, or any more.
		switch ro.Phase {
		case flv1.PhaseHalted:
			c.Status, c.Reason = metav1.ConditionFalse, flv1.ReasonRolloutHalted
		case flv1.PhaseRollingBack, flv1.PhaseRolledBack:
			c.Status, c.Reason = metav1.ConditionFalse, flv1.ReasonRolledBack
		}
		c.Message = fmt.Sprintf("rollout %s %s: %s; %s", ro.Name, ro.Phase, ro.Message, c.Message)
	}
	if b.Spec.Paused {
		c.Message = "paused; " + c.Message
	}
	meta.SetStatusCondition(&st.Conditions, c)
}

// setStalledCondition records whether the Bundle can be rendered as written.
func setStalledCondition(b *flv1.Bundle, err *StallError) {
	c := metav1.Condition{Type: flv1.ConditionStalled, ObservedGeneration: b.Generation,
		Status: metav1.ConditionFalse, Reason: flv1.ReasonRendered, Message: "rendered and stored"}
	switch {
	case err != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, err.Reason, err.Message
	case b.Spec.Paused:
		c.Reason, c.Message = flv1.ReasonPaused, "paused: changes are not rendered or sent until spec.paused is false"
	}
	meta.SetStatusCondition(&b.Status.Conditions, c)
}
