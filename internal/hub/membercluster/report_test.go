package membercluster

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

func TestReportToCluster(t *testing.T) {
	tests := []struct {
		name, namespace, reportName, labelCluster string
		want                                      string // "" means no request
	}{
		{"own namespace", "cluster-a", "a", "a", "a"},
		{"the namespace decides, not the name or label", "cluster-a", "b", "b", "a"},
		{"not a cluster namespace", "default", "a", "a", ""},
		{"bare prefix", "cluster-", "a", "a", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := &flv1.MemberClusterReport{ObjectMeta: metav1.ObjectMeta{Namespace: tt.namespace, Name: tt.reportName,
				Labels: map[string]string{flv1.LabelCluster: tt.labelCluster}}}
			reqs := reportToCluster(context.Background(), rep)
			got := ""
			if len(reqs) == 1 {
				got = reqs[0].Name
			}
			if len(reqs) > 1 || got != tt.want {
				t.Errorf("reportToCluster = %v, want %q", reqs, tt.want)
			}
		})
	}
}
