package agent

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// factSource reads the member's nodes and pods from shared informers.
type factSource struct {
	nodes listersv1.NodeLister
	pods  listersv1.PodLister
}

// startFactWatch starts node and pod informers on the member. Pods are trimmed to what
// summarize reads, so a member with many pods costs the agent little memory. A node change
// asks for a report; pod churn is only picked up by the periodic report.
func (a *Agent) startFactWatch(ctx context.Context) (*factSource, error) {
	f := informers.NewSharedInformerFactoryWithOptions(a.member, 0, informers.WithTransform(trimPod))
	nodeInf := f.Core().V1().Nodes()
	podInf := f.Core().V1().Pods()
	_, _ = nodeInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { a.requestReport() },
		DeleteFunc: func(any) { a.requestReport() },
		UpdateFunc: func(o, n any) {
			on, ok1 := o.(*corev1.Node)
			nn, ok2 := n.(*corev1.Node)
			if ok1 && ok2 && (nodeReady(on) != nodeReady(nn) || !equality.Semantic.DeepEqual(on.Status.Allocatable, nn.Status.Allocatable)) {
				a.requestReport()
			}
		},
	})
	_ = podInf.Informer() // registers it: the factory starts only informers asked for before Start
	f.Start(ctx.Done())
	syncCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for typ, ok := range f.WaitForCacheSync(syncCtx.Done()) {
		if !ok {
			return nil, fmt.Errorf("member cluster: could not list %v (is the member API server reachable, and may the agent list nodes and pods?)", typ)
		}
	}
	return &factSource{nodes: nodeInf.Lister(), pods: podInf.Lister()}, nil
}

func trimPod(o any) (any, error) {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return o, nil
	}
	t := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, ResourceVersion: p.ResourceVersion, UID: p.UID}}
	t.Spec.NodeName, t.Spec.Overhead = p.Spec.NodeName, p.Spec.Overhead
	for _, c := range p.Spec.Containers {
		t.Spec.Containers = append(t.Spec.Containers, corev1.Container{Resources: corev1.ResourceRequirements{Requests: c.Resources.Requests}})
	}
	for _, c := range p.Spec.InitContainers {
		t.Spec.InitContainers = append(t.Spec.InitContainers, corev1.Container{Resources: corev1.ResourceRequirements{Requests: c.Resources.Requests}})
	}
	t.Status.Phase = p.Status.Phase
	return t, nil
}

func (a *Agent) requestReport() {
	select {
	case a.report <- struct{}{}:
	default:
	}
}

// reportLoop writes facts at start and on node changes (coalesced over a second); every
// ReportInterval it re-reads them and writes them if they changed or are MaxReportAge old.
func (a *Agent) reportLoop(ctx context.Context, src *factSource) {
	dyn, err := dynamic.NewForConfig(a.hub)
	if err != nil {
		a.log.Error("hub client", "error", err)
		return
	}
	bo := backoff{min: time.Second, max: 30 * time.Second}
	a.requestReport()
	tick := time.NewTicker(a.opts.ReportInterval)
	defer tick.Stop()
	var last reported
	for {
		periodic := false
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			periodic = true
		case <-a.report:
			if !sleep(ctx, time.Second) { // coalesce a burst of node events
				return
			}
		}
		for {
			err := a.reportOnce(ctx, dyn, src, &last, periodic)
			if err == nil || ctx.Err() != nil {
				bo.reset()
				break
			}
			wait := bo.next()
			a.hubError(ctx, "report facts", err, wait)
			if !sleep(ctx, wait) {
				return
			}
		}
	}
}

// reported is what the agent last wrote, and when.
type reported struct {
	facts flv1.ClusterFacts
	at    time.Time
}

// needsWrite reports whether facts read at now must be written: always on a node event or
// the first time; on a periodic check only when they changed or the last write is
// MaxReportAge old, so that an idle fleet's agents do not rewrite the same facts every minute.
func needsWrite(last *reported, facts flv1.ClusterFacts, periodic bool, now time.Time) bool {
	if !periodic || last.at.IsZero() || now.Sub(last.at) >= MaxReportAge {
		return true
	}
	prev, cur := last.facts, facts
	prev.LastReportTime, cur.LastReportTime = nil, nil
	return !equality.Semantic.DeepEqual(prev, cur)
}

func (a *Agent) reportOnce(ctx context.Context, dyn dynamic.Interface, src *factSource, last *reported, periodic bool) error {
	v, err := a.member.Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("member version: %w", err)
	}
	nodes, _ := src.nodes.List(labels.Everything())
	pods, _ := src.pods.List(labels.Everything())
	ns, rs := summarize(nodes, pods)
	now := time.Now()
	facts := flv1.ClusterFacts{KubernetesVersion: v.GitVersion, Nodes: &ns, Resources: &rs, AgentVersion: a.opts.Version,
		LastReportTime: &metav1.Time{Time: now}}
	if !needsWrite(last, facts, periodic, now) {
		return nil
	}
	if err := WriteReport(ctx, dyn, a.Cluster(), facts); err != nil {
		return err
	}
	*last = reported{facts: facts, at: now}
	a.log.Debug("facts reported", "nodes", ns.Total, "ready", ns.Ready)
	return nil
}

var reportsGVR = flv1.GroupVersion.WithResource("memberclusterreports")

// WriteReport applies the cluster's MemberClusterReport in its hub namespace, creating it
// the first time. The bench's simulated agents write their facts with it too.
func WriteReport(ctx context.Context, dyn dynamic.Interface, cluster string, facts flv1.ClusterFacts) error {
	u, err := flv1.MemberClusterReportApply(cluster, facts)
	if err != nil {
		return err
	}
	_, err = dyn.Resource(reportsGVR).Namespace(namespace(cluster)).Apply(ctx, cluster, u,
		metav1.ApplyOptions{FieldManager: FieldOwner, Force: true})
	return err
}
