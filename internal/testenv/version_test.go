package testenv

import (
	"os"
	"strings"
	"testing"
)

// The cache key compiled into testenv must be the one hack/k8s/build.sh builds into.
func TestVersionMatchesBuildScript(t *testing.T) {
	b, err := os.ReadFile("../../hack/k8s/VERSION")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(b)); got != Version {
		t.Fatalf("hack/k8s/VERSION is %q but testenv.Version is %q: update both together", got, Version)
	}
}
