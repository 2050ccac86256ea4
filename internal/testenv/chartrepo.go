package testenv

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	repo "helm.sh/helm/v4/pkg/repo/v1"
)

// ServeChartRepo packages charts with the Helm SDK into dir, writes their index.yaml (with
// digests) and serves dir as an HTTP chart repository on loopback. Close the server when done.
func ServeChartRepo(dir string, charts ...*chart.Chart) (*httptest.Server, error) {
	idx := repo.NewIndexFile()
	for _, ch := range charts {
		p, err := chartutil.Save(ch, dir)
		if err != nil {
			return nil, err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(data)
		if err := idx.MustAdd(ch.Metadata, filepath.Base(p), "", hex.EncodeToString(sum[:])); err != nil {
			return nil, err
		}
	}
	if err := idx.WriteFile(filepath.Join(dir, "index.yaml"), 0o644); err != nil {
		return nil, err
	}
	return httptest.NewServer(http.FileServer(http.Dir(dir))), nil
}
