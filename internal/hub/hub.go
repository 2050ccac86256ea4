// Package hub assembles the hub's controllers into one controller-runtime manager.
package hub

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/gitsource"
	"flotilla.dev/flotilla/internal/hub/bundle"
	"flotilla.dev/flotilla/internal/hub/membercluster"
	"flotilla.dev/flotilla/internal/hub/source"
	"flotilla.dev/flotilla/internal/hub/writelimit"
)

// SystemNamespace holds the hub's own objects, such as its leader-election Lease.
const SystemNamespace = "flotilla-system"

// Options configure the hub.
type Options struct {
	Config *rest.Config
	// LeaderElect makes only one replica reconcile at a time.
	LeaderElect bool
	// MetricsAddr serves /metrics ("0" disables it).
	MetricsAddr string
	// PprofAddr serves Go's /debug/pprof ("" or "0" disables it), to profile the hub.
	PprofAddr string
	// ProbeAddr serves /healthz and /readyz ("0" disables them).
	ProbeAddr string
	// HeartbeatGrace: see membercluster.Reconciler.
	HeartbeatGrace time.Duration
	// InstallCRDs installs or upgrades Flotilla's CRDs at start.
	InstallCRDs bool
	// QPS and Burst bound the hub's requests to its API server (defaults DefaultQPS and
	// DefaultBurst). A Bundle change writes one Work per cluster, so these bound fan-out.
	QPS   float32
	Burst int
	// WebhookAddr serves the Git webhook /hooks/git/<namespace>/<name> ("" or "0" disables it).
	WebhookAddr string
	// GitCacheDir holds the bare clones of GitRepositories (default: a directory under the
	// user's cache directory). It may be lost: a restarted hub fetches again.
	GitCacheDir string
}

// The hub's default client rate limits: the hub API server is Flotilla's own, and its
// priority-and-fairness limits protect it; a low client limit would only slow fan-out.
const (
	DefaultQPS   = 500
	DefaultBurst = 1000
)

// MaxWritesInFlight bounds the hub's concurrent write requests. It is what the controllers
// send at once unthrottled at most (bundle.WorkWriters for each of the bundle.Workers
// reconciles, one write per provisioning worker), so it binds only after the API server
// answered 429 (writelimit).
const MaxWritesInFlight = bundle.Workers*bundle.WorkWriters + membercluster.ProvisionWorkers

var writesInFlightLimit = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "flotilla_hub_writes_in_flight_limit",
	Help: "Write requests the hub may have in flight now: the maximum, or less while its API server answers 429.",
})

func init() { metrics.Registry.MustRegister(writesInFlightLimit) }

// Scheme knows the built-in kinds and Flotilla's.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := flv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// Run starts the hub and blocks until ctx ends.
func Run(ctx context.Context, o Options) error {
	o.Config = rest.CopyConfig(o.Config)
	o.Config.QPS, o.Config.Burst = o.QPS, o.Burst
	if o.Config.QPS <= 0 {
		o.Config.QPS = DefaultQPS
	}
	if o.Config.Burst <= 0 {
		o.Config.Burst = DefaultBurst
	}
	// Leader election renews its lease outside the write limit: waiting behind a fan-out's
	// writes while throttled, it could lose the lease.
	electionConfig := rest.CopyConfig(o.Config)
	// Every 429 the API server answers cuts how many writes the hub sends at once.
	o.Config.Wrap(writelimit.New(MaxWritesInFlight, func(n int) { writesInFlightLimit.Set(float64(n)) }).Wrap)
	if o.InstallCRDs {
		if err := InstallCRDs(ctx, o.Config); err != nil {
			return err
		}
	}
	for _, ns := range []string{SystemNamespace, flv1.ContentNamespace} {
		if err := ensureNamespace(ctx, o.Config, ns); err != nil {
			return err
		}
	}
	contentKey, err := ensureContentAccess(ctx, o.Config)
	if err != nil {
		return err
	}
	// Only objects that belong to a member cluster are cached: the hub's memory then grows
	// with the fleet, not with whatever else lives on the hub.
	owned, _ := labels.NewRequirement(flv1.LabelCluster, selection.Exists, nil)
	byObject := map[client.Object]cache.ByObject{}
	for _, o := range membercluster.CachedObjects() {
		byObject[o] = cache.ByObject{Label: labels.NewSelector().Add(*owned)}
	}
	byObject[&flv1.Work{}] = cache.ByObject{Label: labels.NewSelector().Add(*owned), Transform: trimWork}
	mgr, err := ctrl.NewManager(o.Config, ctrl.Options{
		Scheme:                  Scheme(),
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        "flotilla-hub",
		LeaderElectionConfig:    electionConfig,
		LeaderElectionNamespace: SystemNamespace,
		// Leaving gives the lease up at once, so a restarted or replaced hub takes over
		// without waiting out the lease.
		LeaderElectionReleaseOnCancel: true,
		Metrics:                       metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:        o.ProbeAddr,
		PprofBindAddress:              o.PprofAddr,
		// Nothing reads managedFields from the cache; they are a large share of each cached
		// Work and MemberCluster, and the hub caches several objects per cluster.
		Cache: cache.Options{ByObject: byObject, DefaultTransform: cache.TransformStripManagedFields()},
	})
	if err != nil {
		return fmt.Errorf("hub manager: %w", err)
	}
	if err := (&membercluster.Reconciler{Client: mgr.GetClient(), HeartbeatGrace: o.HeartbeatGrace}).SetupWithManager(mgr); err != nil {
		return err
	}
	// Once per leadership: an upgrade from a hub that granted each agent a ClusterRole.
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if err := membercluster.DeleteLegacyClusterRoles(ctx, mgr.GetClient()); err != nil {
			ctrl.Log.WithName("hub").Error(err, "per-cluster ClusterRoles of an earlier hub left in place; delete them by hand: kubectl delete clusterrolebindings,clusterroles -l app.kubernetes.io/managed-by=flotilla,"+flv1.LabelCluster)
		}
		return nil
	})); err != nil {
		return err
	}
	if o.GitCacheDir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		o.GitCacheDir = filepath.Join(base, "flotilla", "git")
	}
	gitCache := &gitsource.Cache{Dir: o.GitCacheDir}
	repos := &source.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Cache: gitCache}
	if err := repos.SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&bundle.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ContentKey: contentKey,
		Events: mgr.GetEventRecorder("flotilla-hub"), Git: gitCache}).SetupWithManager(mgr); err != nil {
		return err
	}
	// The webhook runs on the leader only: it feeds the leader's controller.
	hook := &source.Webhook{Repos: mgr.GetClient(), Secrets: mgr.GetAPIReader(), Trigger: repos.Trigger}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error { return source.ServeWebhook(ctx, o.WebhookAddr, hook) })); err != nil {
		return err
	}
	if o.ProbeAddr != "0" && o.ProbeAddr != "" {
		if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
			return err
		}
		if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
			return err
		}
	}
	return mgr.Start(ctx)
}

// trimWork keeps of a Work what the hub reads: its spec, labels and status counts and
// conditions, not the per-object status its agent reports (status.resources, one entry per
// delivered object, read only by the CLI from the API server) nor managedFields. With it,
// the hub's memory per Work does not grow with the objects a Bundle holds.
func trimWork(in any) (any, error) {
	if w, ok := in.(*flv1.Work); ok {
		w.ManagedFields = nil
		w.Status.Resources = nil
	}
	return in, nil
}

func ensureNamespace(ctx context.Context, cfg *rest.Config, name string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s on the hub: %w", name, err)
	}
	return nil
}
