package bundle

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// What the hub remembers writing serves only while its cache lags: once the cache holds
// that generation (or a later one, written by someone else) it is dropped.
func TestForgetCaughtUp(t *testing.T) {
	spec := flv1.WorkSpec{Revision: "r2", Variables: flv1.WorkVariables{Labels: map[string]string{"region": "eu"}}}
	for _, tc := range []struct {
		name      string
		cachedGen int64
		wantKept  bool
	}{
		{"cache lags", 2, true},
		{"cache holds the write", 3, false},
		{"cache holds a later write", 4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{}
			r.remember("cluster-a/w", 3, spec)
			cached := &flv1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: "cluster-a", Name: "w", Generation: tc.cachedGen}}
			if lags := r.cacheLags(cached, spec); lags != tc.wantKept {
				t.Errorf("cacheLags before = %v, want %v", lags, tc.wantKept)
			}
			r.forgetCaughtUp(cached)
			if _, kept := r.written.Load("cluster-a/w"); kept != tc.wantKept {
				t.Errorf("kept = %v, want %v", kept, tc.wantKept)
			}
			if got := r.asWritten(cached); (got.Spec.Revision == "r2") != tc.wantKept {
				t.Errorf("asWritten revision = %q, kept %v", got.Spec.Revision, tc.wantKept)
			}
		})
	}
}
