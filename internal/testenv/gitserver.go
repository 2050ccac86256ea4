package testenv

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
)

// GitHTTPBackend is Debian's git smart-HTTP CGI program (package git).
const GitHTTPBackend = "/usr/lib/git-core/git-http-backend"

// GitServer serves the bare repositories below Root over smart HTTP on loopback, through
// the real `git http-backend`, with optional basic auth. Tests push with the git CLI into
// Root directly and read through the server, as a hub would.
type GitServer struct {
	URL  string // http://127.0.0.1:PORT
	Root string
	// User and Password, when set, are required on every request; a request may instead
	// carry Token as a bearer token, when Token is set.
	User, Password, Token string
	down                  atomic.Bool
	srv                   *http.Server
}

// StartGitServer serves root (created if missing).
func StartGitServer(root, user, password string) (*GitServer, error) {
	if _, err := os.Stat(GitHTTPBackend); err != nil {
		return nil, fmt.Errorf("git http-backend not found at %s (install Debian's git): %w", GitHTTPBackend, err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	g := &GitServer{URL: "http://" + ln.Addr().String(), Root: root, User: user, Password: password}
	backend := &cgi.Handler{Path: GitHTTPBackend, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}
	g.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.down.Load() {
			http.Error(w, "down for the test", http.StatusServiceUnavailable)
			return
		}
		bearer, isBearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if isBearer && g.Token != "" && subtle.ConstantTimeCompare([]byte(bearer), []byte(g.Token)) == 1 {
			backend.ServeHTTP(w, r)
			return
		}
		if g.User != "" {
			u, p, ok := r.BasicAuth()
			if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(g.User)) != 1 || subtle.ConstantTimeCompare([]byte(p), []byte(g.Password)) != 1 {
				w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		backend.ServeHTTP(w, r)
	})}
	go func() { _ = g.srv.Serve(ln) }()
	return g, nil
}

// SetDown makes every request fail with 503 (true) or be served again (false).
func (g *GitServer) SetDown(down bool) { g.down.Store(down) }

// Stop closes the server.
func (g *GitServer) Stop() { _ = g.srv.Close() }

// GitWork is a bare repository on the server and a work tree that pushes to it.
type GitWork struct {
	URL  string // the repository's URL on the server
	Dir  string // the work tree
	bare string
}

// NewRepo creates the bare repository name.git and a work tree for it in workDir.
func (g *GitServer) NewRepo(name, workDir string) (*GitWork, error) {
	bare := filepath.Join(g.Root, name+".git")
	if err := git("", "init", "-q", "--bare", "-b", "main", bare); err != nil {
		return nil, err
	}
	if err := git("", "init", "-q", "-b", "main", workDir); err != nil {
		return nil, err
	}
	if err := git(workDir, "remote", "add", "origin", bare); err != nil {
		return nil, err
	}
	return &GitWork{URL: g.URL + "/" + name + ".git", Dir: workDir, bare: bare}, nil
}

// Commit writes files (path -> content; empty content deletes the file), commits them with
// message and pushes the branch; force pushes even if history was rewritten. It returns the
// new commit's SHA.
func (w *GitWork) Commit(branch, message string, files map[string]string, force bool) (string, error) {
	for p, content := range files {
		full := filepath.Join(w.Dir, p)
		if content == "" {
			if err := os.Remove(full); err != nil && !os.IsNotExist(err) {
				return "", err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	if err := git(w.Dir, "add", "-A"); err != nil {
		return "", err
	}
	if err := git(w.Dir, "commit", "-q", "--allow-empty", "-m", message); err != nil {
		return "", err
	}
	args := []string{"push", "-q", "origin", "HEAD:refs/heads/" + branch}
	if force {
		args = append(args, "--force")
	}
	if err := git(w.Dir, args...); err != nil {
		return "", err
	}
	return w.Head()
}

// Tag tags HEAD and pushes the tag.
func (w *GitWork) Tag(tag string) error {
	if err := git(w.Dir, "tag", "-a", tag, "-m", tag); err != nil {
		return err
	}
	return git(w.Dir, "push", "-q", "origin", "refs/tags/"+tag)
}

// ResetHard moves the work tree's branch back n commits (to rewrite history, then force-push).
func (w *GitWork) ResetHard(n int) error {
	return git(w.Dir, "reset", "-q", "--hard", fmt.Sprintf("HEAD~%d", n))
}

// Head is the work tree's HEAD commit.
func (w *GitWork) Head() (string, error) {
	out, err := exec.Command("git", "-C", w.Dir, "rev-parse", "HEAD").Output()
	return strings.TrimSpace(string(out)), err
}

func git(dir string, args ...string) error {
	base := []string{"-c", "user.name=flotilla-test", "-c", "user.email=test@flotilla.dev", "-c", "init.defaultBranch=main"}
	if dir != "" {
		base = append(base, "-C", dir)
	}
	out, err := exec.Command("git", append(base, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}
