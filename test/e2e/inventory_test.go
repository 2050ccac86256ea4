package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/agent"
)

// TestJoinReportsTrueFacts joins three members and checks that each is Joined and Ready with
// the facts of its real API server: version, node count, summed allocatable, and the requests
// of pods that really run there.
func TestJoinReportsTrueFacts(t *testing.T) {
	ctx := context.Background()
	for i := range 3 {
		ensureJoined(t, i)
	}
	for i := range 3 {
		m := env.Members[i]
		cs := memberClient(t, i)
		v, err := cs.Discovery().ServerVersion()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(v.GitVersion, "v1.37") {
			t.Errorf("%s reports version %q; the pinned binaries are v1.37.x", m.Name, v.GitVersion)
		}
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantCPU, wantMem := resource.Quantity{}, resource.Quantity{}
		for _, n := range nodes.Items {
			wantCPU.Add(n.Status.Allocatable[corev1.ResourceCPU])
			wantMem.Add(n.Status.Allocatable[corev1.ResourceMemory])
		}
		mc := &flv1.MemberCluster{}
		if err := hubC.Get(ctx, types.NamespacedName{Name: m.Name}, mc); err != nil {
			t.Fatal(err)
		}
		for _, c := range []string{flv1.ConditionJoined, flv1.ConditionReady} {
			if !meta.IsStatusConditionTrue(mc.Status.Conditions, c) {
				t.Errorf("%s: %s is not True: %+v", m.Name, c, mc.Status.Conditions)
			}
		}
		if mc.Status.KubernetesVersion != v.GitVersion {
			t.Errorf("%s: reported version %q, member says %q", m.Name, mc.Status.KubernetesVersion, v.GitVersion)
		}
		if mc.Status.Nodes == nil || int(mc.Status.Nodes.Total) != len(nodes.Items) || int(mc.Status.Nodes.Ready) != len(nodes.Items) {
			t.Errorf("%s: reported nodes %+v, member has %d ready nodes", m.Name, mc.Status.Nodes, len(nodes.Items))
		}
		alloc := mc.Status.Resources.Allocatable
		if got := alloc[corev1.ResourceCPU]; got.Cmp(wantCPU) != 0 {
			t.Errorf("%s: allocatable cpu %s, nodes sum to %s", m.Name, got.String(), wantCPU.String())
		}
		if got := alloc[corev1.ResourceMemory]; got.Cmp(wantMem) != 0 {
			t.Errorf("%s: allocatable memory %s, nodes sum to %s", m.Name, got.String(), wantMem.String())
		}
		if mc.Spec.Owner != "team-"+m.Name || mc.Labels["flotilla.dev/ring"] != fmt.Sprint(i) {
			t.Errorf("%s: owner %q labels %v not as joined", m.Name, mc.Spec.Owner, mc.Labels)
		}
		if mc.Status.AgentVersion == "" {
			t.Errorf("%s: no agent version", m.Name)
		}
	}

	// Requests: 3 pods of 250m / 128Mi on member 0 show up as 750m / 384Mi once they run.
	cs := memberClient(t, 0)
	replicas := int32(3)
	labels := map[string]string{"app": "probe"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/probe",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("128Mi")}}}}},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer cs.AppsV1().Deployments("default").Delete(ctx, "probe", metav1.DeleteOptions{})
	name := env.Members[0].Name
	eventually(t, 60*time.Second, "requests of running pods reported", func() error {
		mc := &flv1.MemberCluster{}
		if err := hubC.Get(ctx, types.NamespacedName{Name: name}, mc); err != nil {
			return err
		}
		req := mc.Status.Resources.Requested
		cpu, mem, pods := req[corev1.ResourceCPU], req[corev1.ResourceMemory], req[corev1.ResourcePods]
		if cpu.Cmp(resource.MustParse("750m")) != 0 || mem.Cmp(resource.MustParse("384Mi")) != 0 || pods.Value() != 3 {
			return fmt.Errorf("requested cpu=%s memory=%s pods=%s", cpu.String(), mem.String(), pods.String())
		}
		return nil
	})

	out := mustFlotilla(t, "get", "clusters")
	for _, want := range []string{"NAME", "READY", "K8S VERSION", "LAST SEEN", env.Members[0].Name, env.Members[1].Name, env.Members[2].Name, "32 / 0.75", "128Gi / 384Mi", "2/2"} {
		if !strings.Contains(out, want) {
			t.Errorf("get clusters lacks %q:\n%s", want, out)
		}
	}
	out = mustFlotilla(t, "get", "clusters", "-l", "env=dev", "-o", "wide")
	if !strings.Contains(out, env.Members[0].Name) || strings.Contains(out, env.Members[1].Name) || !strings.Contains(out, "env=dev") {
		t.Errorf("get clusters -l env=dev -o wide:\n%s", out)
	}
	out = mustFlotilla(t, "get", "clusters", env.Members[1].Name, "-o", "json")
	if !strings.Contains(out, `"kind": "MemberCluster"`) || !strings.Contains(out, `"kubernetesVersion"`) {
		t.Errorf("get clusters -o json:\n%s", out)
	}
	if out, err := flotilla(t, "get", "clusters", "-o", "xml"); err == nil || !strings.Contains(out, "unknown output format") {
		t.Errorf("-o xml: want a clear error, got %v: %s", err, out)
	}

	// The hub side of each join: namespace, identity, and the credentials Secret on the member.
	for i := range 3 {
		ns := flv1.ClusterNamespace(env.Members[i].Name)
		if err := hubC.Get(ctx, types.NamespacedName{Name: ns}, &corev1.Namespace{}); err != nil {
			t.Errorf("hub namespace %s: %v", ns, err)
		}
		if _, err := memberClient(t, i).CoreV1().Secrets(agent.SystemNamespace).Get(ctx, agent.CredentialsSecret, metav1.GetOptions{}); err != nil {
			t.Errorf("member %d credentials: %v", i, err)
		}
	}
}
