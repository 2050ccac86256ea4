package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// rolloutMembers are the members rollout tests use: the shared members 0-2 and 6-8, which
// no other test joins or unjoins. Their labels: 0 dev, 1 staging, 2 and 6-8 prod, and
// flotilla.dev/ring = the index.
var rolloutMembers = []int{0, 1, 2, 6, 7, 8}

// rolloutFleet joins the rollout members and returns their cluster names, by index.
func rolloutFleet(t *testing.T) map[int]string {
	t.Helper()
	out := map[int]string{}
	for _, i := range rolloutMembers {
		out[i] = ensureJoined(t, i)
	}
	return out
}

func names(fleet map[int]string) []string {
	var out []string
	for _, n := range fleet {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func ringSelector(rings ...string) metav1.LabelSelector {
	return metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "flotilla.dev/ring", Operator: metav1.LabelSelectorOpIn, Values: rings}}}
}

func duration(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

// changeAndRollOut changes the Bundle and returns the Rollout the hub opens for its new
// revision.
func changeAndRollOut(t *testing.T, ns, bundle string, mutate func(*flv1.Bundle)) *flv1.Rollout {
	t.Helper()
	before := getBundle(t, ns, bundle).Status.Revision
	updateBundle(t, ns, bundle, mutate)
	var ro *flv1.Rollout
	eventually(t, 30*time.Second, "a rollout to the new revision", func() error {
		b := getBundle(t, ns, bundle)
		r := b.Status.Rollout
		if b.Status.ObservedGeneration != b.Generation || b.Status.Revision == before || r == nil || r.To != b.Status.Revision {
			return fmt.Errorf("revision %s, rollout %+v, conditions: %s", b.Status.Revision, r, conditionsText(b.Status.Conditions))
		}
		ro = &flv1.Rollout{}
		return hubC.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: r.Name}, ro)
	})
	return ro
}

// waitRollout waits until the Rollout's status satisfies ok, and returns it.
func waitRollout(t *testing.T, ns, name string, timeout time.Duration, what string, ok func(*flv1.Rollout) error) *flv1.Rollout {
	t.Helper()
	var ro *flv1.Rollout
	eventually(t, timeout, what, func() error {
		ro = &flv1.Rollout{}
		if err := hubC.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, ro); err != nil {
			return err
		}
		if err := ok(ro); err != nil {
			return fmt.Errorf("%w (phase %s: %s)", err, ro.Status.Phase, ro.Status.Message)
		}
		return nil
	})
	return ro
}

func inPhase(p flv1.RolloutPhase) func(*flv1.Rollout) error {
	return func(ro *flv1.Rollout) error {
		if ro.Status.Phase != p {
			return fmt.Errorf("phase %s, want %s", ro.Status.Phase, p)
		}
		return nil
	}
}

// workRevisions maps each cluster to the revision its Work asks for ("-" without a Work).
func workRevisions(t *testing.T, ns, bundle string, clusters ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, c := range clusters {
		w := &flv1.Work{}
		err := hubC.Get(context.Background(), types.NamespacedName{Namespace: flv1.ClusterNamespace(c), Name: flv1.WorkName(ns, bundle)}, w)
		switch {
		case err == nil:
			out[c] = w.Spec.Revision
		case client.IgnoreNotFound(err) == nil:
			out[c] = "-"
		default:
			t.Fatal(err)
		}
	}
	return out
}

// expectRevisions checks that each named cluster's Work asks for the given revision.
func expectRevisions(t *testing.T, ns, bundle string, want map[string]string) {
	t.Helper()
	var cs []string
	for c := range want {
		cs = append(cs, c)
	}
	got := workRevisions(t, ns, bundle, cs...)
	for c, rev := range want {
		if got[c] != rev {
			t.Errorf("cluster %s asks for %s, want %s", c, got[c], rev)
		}
	}
}

// rolloutEvents lists the reasons of the Events recorded on a Rollout, oldest first.
func rolloutEvents(t *testing.T, ro *flv1.Rollout) string {
	t.Helper()
	list := &corev1.EventList{}
	if err := hubC.List(context.Background(), list, client.InNamespace(ro.Namespace)); err != nil {
		t.Fatal(err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return eventTime(&list.Items[i]).Before(eventTime(&list.Items[j])) })
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "Rollout" && e.InvolvedObject.Name == ro.Name {
			out = append(out, e.Reason)
		}
	}
	return strings.Join(out, " ")
}

func eventTime(e *corev1.Event) time.Time {
	if !e.EventTime.IsZero() {
		return e.EventTime.Time
	}
	return e.LastTimestamp.Time
}

// scrapeHub returns the hub's Prometheus metrics.
func scrapeHub(t *testing.T) string {
	t.Helper()
	resp, err := http.Get(hubMetrics)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}
