package deliver

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/agent/apply"
	"flotilla.dev/flotilla/internal/agent/drift"
)

// MaxDriftFields bounds the drifted fields listed per object.
const MaxDriftFields = 20

// outcome is what one pass over a Work found, for its status.
type outcome struct {
	// blocked: nothing was applied, for this reason (content, variables, unknown kinds).
	blockedReason, blockedMessage string
	results                       []apply.Result // apply errors, per object
	health                        []apply.Result // kstatus, per object
	drift                         map[apply.Ref][]drift.Difference
	corrected                     int // objects restored in this pass
	breakGlass                    *flv1.BreakGlass
	mode                          flv1.DriftMode
}

// buildStatus turns an outcome into Work status. prev carries what this pass did not
// touch (the applied revision when nothing could be applied).
func buildStatus(w *flv1.Work, prev flv1.WorkStatus, o outcome, now time.Time) flv1.WorkStatus {
	st := flv1.WorkStatus{ObservedGeneration: w.Generation, AppliedRevision: prev.AppliedRevision,
		AppliedHash: prev.AppliedHash, LastAppliedTime: prev.LastAppliedTime, Corrections: prev.Corrections,
		Conditions: prev.Conditions}
	gen := w.Generation
	set := func(typ string, ok bool, reason, msg string) {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen})
	}
	if o.blockedReason != "" {
		set(flv1.ConditionApplied, false, o.blockedReason, o.blockedMessage)
		set(flv1.ConditionAvailable, false, o.blockedReason, "not applied")
		st.Resources = prev.Resources
		return st
	}
	errs := map[apply.Ref]string{}
	var failed []string
	for _, r := range o.results {
		if r.Err != nil {
			errs[r.Ref] = r.Err.Error()
			failed = append(failed, fmt.Sprintf("%s: %v", r.Ref, r.Err))
		}
	}
	var inProgress, unhealthy []string
	for _, h := range o.health {
		rs := flv1.ResourceStatus{Group: h.Group, Version: h.Version, Kind: h.Kind, Namespace: h.Namespace, Name: h.Name,
			Health: string(h.Health), Message: h.Message, Error: errs[h.Ref]}
		if h.Err != nil && rs.Error == "" {
			rs.Health, rs.Message = string(status.UnknownStatus), h.Err.Error()
		}
		for i, d := range o.drift[h.Ref] {
			if i == MaxDriftFields {
				break
			}
			rs.Drift = append(rs.Drift, flv1.FieldDrift{Path: d.Path, Desired: d.Desired, Live: d.Live})
		}
		switch status.Status(rs.Health) {
		case status.CurrentStatus:
		case status.FailedStatus:
			unhealthy = append(unhealthy, fmt.Sprintf("%s: %s", h.Ref, rs.Message))
		default:
			inProgress = append(inProgress, fmt.Sprintf("%s: %s", h.Ref, orDefault(rs.Message, rs.Health)))
		}
		st.Resources = append(st.Resources, rs)
	}
	if len(failed) > 0 {
		set(flv1.ConditionApplied, false, flv1.ReasonApplyFailed, fmt.Sprintf("%d of %d objects failed: %s", len(failed), len(o.health), firstN(failed, 3)))
	} else {
		set(flv1.ConditionApplied, true, flv1.ReasonApplySucceeded, fmt.Sprintf("%d objects applied at %s", len(o.health), w.Spec.Revision))
		if st.AppliedHash != w.Spec.Content.Hash || st.AppliedRevision != w.Spec.Revision || st.LastAppliedTime == nil {
			st.LastAppliedTime = &metav1.Time{Time: now}
		}
		st.AppliedRevision, st.AppliedHash = w.Spec.Revision, w.Spec.Content.Hash
	}
	switch {
	case len(failed) > 0:
		set(flv1.ConditionAvailable, false, flv1.ReasonApplyFailed, "not every object was applied")
	case len(unhealthy) > 0:
		set(flv1.ConditionAvailable, false, flv1.ReasonResourcesFailed, firstN(unhealthy, 3))
	case len(inProgress) > 0:
		set(flv1.ConditionAvailable, false, flv1.ReasonInProgress, firstN(inProgress, 3))
	default:
		set(flv1.ConditionAvailable, true, flv1.ReasonAllCurrent, fmt.Sprintf("%d objects current", len(o.health)))
	}
	st.Corrections += int64(o.corrected)
	drifted := 0
	for _, d := range o.drift {
		if len(d) > 0 {
			drifted++
		}
	}
	switch {
	case drifted > 0 && o.breakGlass != nil:
		set(flv1.ConditionDrifted, true, flv1.ReasonBreakGlassActive, fmt.Sprintf("%d objects drifted; correction suspended by %s until %s: %s",
			drifted, o.breakGlass.By, o.breakGlass.Until.UTC().Format(time.RFC3339), o.breakGlass.Reason))
	case drifted > 0:
		set(flv1.ConditionDrifted, true, flv1.ReasonDriftDetected, fmt.Sprintf("%d objects differ from the delivered state (drift mode %s)", drifted, o.mode))
	case o.corrected > 0:
		set(flv1.ConditionDrifted, false, flv1.ReasonDriftCorrected, fmt.Sprintf("restored %d changed or deleted objects at %s", o.corrected, now.UTC().Format(time.RFC3339)))
	case o.breakGlass != nil:
		set(flv1.ConditionDrifted, false, flv1.ReasonBreakGlassActive, fmt.Sprintf("no drift; correction suspended by %s until %s: %s",
			o.breakGlass.By, o.breakGlass.Until.UTC().Format(time.RFC3339), o.breakGlass.Reason))
	default:
		if c := meta.FindStatusCondition(st.Conditions, flv1.ConditionDrifted); c == nil || c.Status == metav1.ConditionTrue || c.Reason == flv1.ReasonBreakGlassActive {
			set(flv1.ConditionDrifted, false, flv1.ReasonNoDrift, "live objects match the delivered state")
		} else {
			c.ObservedGeneration = gen
		}
	}
	return st
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func firstN(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, "; ")
	}
	return strings.Join(items[:n], "; ") + fmt.Sprintf("; and %d more", len(items)-n)
}
