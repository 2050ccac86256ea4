package gitsource

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/transport/http"

	"flotilla.dev/flotilla/internal/testenv"
)

// TestFetchAgainstARealGitServer: go-git against `git http-backend` on loopback, with basic
// auth: branches, tags (annotated), semver ranges, commits, unchanged repositories, wrong
// credentials, a server that is down, a force-push, ignore patterns.
func TestFetchAgainstARealGitServer(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	srv, err := testenv.StartGitServer(filepath.Join(tmp, "srv"), "fleet", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	srv.Token = "a-bearer-token" // set before the first request
	w, err := srv.NewRepo("fleet", filepath.Join(tmp, "work"))
	if err != nil {
		t.Fatal(err)
	}
	c1, err := w.Commit("main", "first", map[string]string{"apps/web/cm.yaml": "a: 1\n", "apps/web/notes.md": "x", "README.md": "hi"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Tag("v1.0.0"); err != nil {
		t.Fatal(err)
	}
	c2, err := w.Commit("main", "second\n\nbody", map[string]string{"apps/web/cm.yaml": "a: 2\n"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Tag("v1.1.0"); err != nil {
		t.Fatal(err)
	}
	auth := &http.BasicAuth{Username: "fleet", Password: "s3cret"}
	cache := &Cache{Dir: filepath.Join(tmp, "cache")}

	tests := []struct {
		name    string
		ref     Ref
		commit  string
		refName string
	}{
		{"default branch main", Ref{}, c2, "main"},
		{"annotated tag", Ref{Tag: "v1.0.0"}, c1, "v1.0.0"},
		{"semver range picks the highest", Ref{SemVer: ">=1.0.0 <2.0.0"}, c2, "v1.1.0"},
		{"semver range below", Ref{SemVer: "~1.0"}, c1, "v1.0.0"},
		{"full commit", Ref{Commit: c1}, c1, c1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := cache.Fetch(ctx, w.URL, tc.ref, auth)
			if err != nil {
				t.Fatal(err)
			}
			if r.Commit != tc.commit || r.Ref != tc.refName {
				t.Errorf("got %s at %s, want %s at %s", r.Ref, r.Commit, tc.refName, tc.commit)
			}
		})
	}
	r, err := cache.Fetch(ctx, w.URL, Ref{}, auth)
	if err != nil || r.Message != "second" || r.Author != "flotilla-test" {
		t.Errorf("result %+v, %v", r, err)
	}
	if r, err := cache.Fetch(ctx, w.URL, Ref{}, &http.TokenAuth{Token: "a-bearer-token"}); err != nil || r.Commit != c2 {
		t.Errorf("bearer token: %+v, %v", r, err)
	}
	if _, err := cache.Fetch(ctx, w.URL, Ref{}, &http.TokenAuth{Token: "wrong"}); !errors.Is(err, ErrAuth) {
		t.Errorf("wrong bearer token: %v", err)
	}

	files, err := cache.Files(w.URL, c2, "apps/web", []string{"*.md"})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || string(files["apps/web/cm.yaml"]) != "a: 2\n" {
		t.Errorf("files %v", files)
	}
	if _, err := cache.Files(w.URL, c2, "apps/nope", nil); err == nil || !strings.Contains(err.Error(), `path "apps/nope"`) {
		t.Errorf("missing path: %v", err)
	}

	failures := []struct {
		name string
		ref  Ref
		auth *http.BasicAuth
		down bool
		want error
		text string
	}{
		{"wrong password", Ref{}, &http.BasicAuth{Username: "fleet", Password: "nope"}, false, ErrAuth, "authentication"},
		{"no credentials", Ref{}, nil, false, ErrAuth, "authentication"},
		{"no such branch", Ref{Branch: "nope"}, auth, false, ErrRefNotFound, "no branch nope"},
		{"no tag in range", Ref{SemVer: ">=2"}, auth, false, ErrRefNotFound, "tags: v1.0.0, v1.1.0"},
		{"server down", Ref{}, auth, true, ErrUnreachable, "503"},
	}
	for _, tc := range failures {
		t.Run(tc.name, func(t *testing.T) {
			srv.SetDown(tc.down)
			defer srv.SetDown(false)
			var a = tc.auth
			var err error
			if a == nil {
				_, err = cache.Fetch(ctx, w.URL, tc.ref, nil)
			} else {
				_, err = cache.Fetch(ctx, w.URL, tc.ref, a)
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Errorf("error %v, want %v containing %q", err, tc.want, tc.text)
			}
		})
	}

	// A force-push: main moves to a commit that does not descend from c2.
	if err := w.ResetHard(1); err != nil {
		t.Fatal(err)
	}
	c3, err := w.Commit("main", "rewritten", map[string]string{"apps/web/cm.yaml": "a: 3\n"}, true)
	if err != nil {
		t.Fatal(err)
	}
	r, err = cache.Fetch(ctx, w.URL, Ref{}, auth)
	if err != nil || r.Commit != c3 {
		t.Fatalf("after force-push: %+v, %v", r, err)
	}
	if ok, err := cache.Descends(w.URL, c3, c2); err != nil || ok {
		t.Errorf("c3 descends from c2 = %v, %v; want false", ok, err)
	}
	if ok, err := cache.Descends(w.URL, c2, c1); err != nil || !ok {
		t.Errorf("c2 descends from c1 = %v, %v; want true", ok, err)
	}
}
