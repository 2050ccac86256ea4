package testenv

import (
	"fmt"
	"os"
	"path/filepath"
)

// binary returns the path of a Kubernetes binary in the cache, with advice if it is missing.
func binary(binDir, name string) (string, error) {
	p := filepath.Join(binDir, name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s not found in %s: run `make k8s-bin` (or set FLOTILLA_K8S_DIR)", name, binDir)
	}
	return p, nil
}
