package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// profile records CPU profiles of the hub controllers and, when it serves them
// (FLOTILLA_APISERVER_PROFILING=1), of the API server, for d, into ProfileDir. It returns
// at once; the channel then yields the two results (or is closed when not profiling).
func (e *Env) profile(ctx context.Context, name string, d time.Duration) <-chan error {
	done := make(chan error, 2)
	if e.opts.ProfileDir == "" {
		close(done)
		return done
	}
	secs := int(max(1, d.Round(time.Second)/time.Second))
	get := func(file string, fetch func() (io.ReadCloser, error)) {
		rc, err := fetch()
		if err == nil {
			defer rc.Close()
			var f *os.File
			if f, err = os.Create(filepath.Join(e.opts.ProfileDir, file)); err == nil {
				_, err = io.Copy(f, rc)
				_ = f.Close()
			}
		}
		done <- err
	}
	go get(fmt.Sprintf("hub-%s.pprof", name), func() (io.ReadCloser, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", e.pprof, secs), nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return nil, fmt.Errorf("hub profile: %s", resp.Status)
		}
		return resp.Body, nil
	})
	if os.Getenv("FLOTILLA_APISERVER_PROFILING") == "" {
		done <- nil
		return done
	}
	go get(fmt.Sprintf("kube-apiserver-%s.pprof", name), func() (io.ReadCloser, error) {
		return e.Clientset.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", fmt.Sprint(secs)).Timeout(d + time.Minute).Stream(ctx)
	})
	return done
}

// heapProfile saves the hub controllers' heap profile (what is live after a GC) into
// ProfileDir, when profiling: it says which cached objects the per-cluster memory holds.
func (e *Env) heapProfile(ctx context.Context, name string) error {
	if e.opts.ProfileDir == "" {
		return nil
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/debug/pprof/heap?gc=1", e.pprof), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("hub heap profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("hub heap profile: %s", resp.Status)
	}
	f, err := os.Create(filepath.Join(e.opts.ProfileDir, fmt.Sprintf("hub-heap-%s.pprof", name)))
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	return err
}
