package bundle

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// Rollout metrics on the hub's /metrics, one series set per Bundle: its latest rollout.
var (
	rolloutPhase = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "flotilla_rollout_phase",
		Help: "1 for the phase the Bundle's latest rollout is in (0 series are not kept).",
	}, []string{"namespace", "bundle", "rollout", "phase"})
	rolloutProgress = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "flotilla_rollout_progress_ratio",
		Help: "Share of the rollout's clusters whose Work asks for the new revision, 0 to 1.",
	}, []string{"namespace", "bundle"})
	rolloutBudgetUsed = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "flotilla_rollout_failure_budget_used",
		Help: "Clusters counted as failed in the Bundle's latest rollout.",
	}, []string{"namespace", "bundle"})
	rolloutBudgetAllowed = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "flotilla_rollout_failure_budget_allowed",
		Help: "Failures the Bundle's latest rollout may have before it halts.",
	}, []string{"namespace", "bundle"})
	rolloutClusters = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "flotilla_rollout_clusters",
		Help: "Clusters of the Bundle's latest rollout by state: total, updated, healthy, failed, unreachable, pending_rollback.",
	}, []string{"namespace", "bundle", "state"})
)

func init() {
	metrics.Registry.MustRegister(rolloutPhase, rolloutProgress, rolloutBudgetUsed, rolloutBudgetAllowed, rolloutClusters)
}

// observeRollout publishes a Bundle's latest rollout.
func observeRollout(b *flv1.Bundle, ro *flv1.Rollout) {
	l := prometheus.Labels{"namespace": b.Namespace, "bundle": b.Name}
	rolloutPhase.DeletePartialMatch(l)
	st := &ro.Status
	phase := string(st.Phase)
	if phase == "" {
		phase = "Pending"
	}
	rolloutPhase.WithLabelValues(b.Namespace, b.Name, ro.Name, phase).Set(1)
	ratio := 0.0
	if st.Clusters.Total > 0 {
		ratio = float64(st.Clusters.Updated) / float64(st.Clusters.Total)
	}
	rolloutProgress.With(l).Set(ratio)
	rolloutBudgetUsed.With(l).Set(float64(st.FailureBudget.Used))
	rolloutBudgetAllowed.With(l).Set(float64(st.FailureBudget.Allowed))
	for state, n := range map[string]int32{"total": st.Clusters.Total, "updated": st.Clusters.Updated, "healthy": st.Clusters.Healthy,
		"failed": st.Clusters.Failed, "unreachable": st.Clusters.Unreachable, "pending_rollback": st.PendingRollbackCount} {
		rolloutClusters.WithLabelValues(b.Namespace, b.Name, state).Set(float64(n))
	}
}

// forgetRollout drops a Bundle's series (deleted, or without a rollout strategy now).
func forgetRollout(namespace, bundle string) {
	l := prometheus.Labels{"namespace": namespace, "bundle": bundle}
	for _, v := range []*prometheus.GaugeVec{rolloutPhase, rolloutProgress, rolloutBudgetUsed, rolloutBudgetAllowed, rolloutClusters} {
		v.DeletePartialMatch(l)
	}
}
