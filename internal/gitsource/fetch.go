// Package gitsource fetches Git repositories for the hub with go-git and reads files at a
// commit. Each repository is kept as a bare clone in a local cache, so a fetch of an
// unchanged repository costs one ref listing; the hub never shells out to git.
package gitsource

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/Masterminds/semver/v3"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// Kinds of failure, for conditions: a caller tells them apart with errors.Is.
var (
	ErrAuth        = errors.New("authentication failed") // also: the SSH host key is not the pinned one
	ErrRefNotFound = errors.New("ref not found")
	ErrUnreachable = errors.New("repository unreachable")
)

// Ref is what to resolve: exactly one field set (Branch "main" when none is).
type Ref struct {
	Branch, Tag, SemVer, Commit string
}

func (r Ref) String() string {
	switch {
	case r.Tag != "":
		return "tag " + r.Tag
	case r.SemVer != "":
		return "semver " + r.SemVer
	case r.Commit != "":
		return "commit " + r.Commit
	}
	return "branch " + r.branch()
}

func (r Ref) branch() string {
	if r.Branch == "" {
		return "main"
	}
	return r.Branch
}

// Result is a fetched commit.
type Result struct {
	// Ref resolved: the branch or tag name, or the commit.
	Ref     string
	Commit  string
	Message string
	Author  string
}

// Cache holds bare clones under Dir, one per URL.
type Cache struct {
	Dir string
	mu  sync.Map // url -> *sync.Mutex: one fetch per repository at a time
}

func (c *Cache) lock(url string) func() {
	m, _ := c.mu.LoadOrStore(url, &sync.Mutex{})
	m.(*sync.Mutex).Lock()
	return m.(*sync.Mutex).Unlock
}

func (c *Cache) open(url string) (*git.Repository, error) {
	sum := sha256.Sum256([]byte(url))
	dir := filepath.Join(c.Dir, hex.EncodeToString(sum[:16]))
	repo, err := git.PlainOpen(dir)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		if repo, err = git.PlainInit(dir, true); err != nil {
			return nil, err
		}
		_, err = repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{url}})
	}
	return repo, err
}

// Fetch resolves ref on the remote and makes sure its commit is in the cache. It lists the
// remote's refs first and fetches only when the commit is not already there.
func (c *Cache) Fetch(ctx context.Context, url string, ref Ref, auth transport.AuthMethod) (*Result, error) {
	defer c.lock(url)()
	repo, err := c.open(url)
	if err != nil {
		return nil, fmt.Errorf("git cache for %s: %w", url, err)
	}
	remote, err := repo.Remote("origin")
	if err != nil {
		return nil, err
	}
	refs, err := remote.ListContext(ctx, &git.ListOptions{Auth: auth})
	if err != nil {
		return nil, classify(url, err)
	}
	name, hash, err := resolve(refs, ref)
	if err != nil {
		return nil, err
	}
	if _, err := repo.CommitObject(hash); err != nil {
		// Not in the cache yet: fetch that ref (tags too, so an annotated tag resolves).
		spec := config.RefSpec(fmt.Sprintf("+%s:%s", name, name))
		if ref.Commit != "" {
			spec = config.RefSpec("+refs/heads/*:refs/heads/*")
		}
		err := remote.FetchContext(ctx, &git.FetchOptions{RefSpecs: []config.RefSpec{spec}, Auth: auth, Tags: git.AllTags, Force: true})
		if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
			return nil, classify(url, err)
		}
	}
	commit, err := commitOf(repo, hash)
	if err != nil {
		if ref.Commit != "" {
			return nil, fmt.Errorf("%w: commit %s is on no branch of %s", ErrRefNotFound, ref.Commit, url)
		}
		return nil, fmt.Errorf("read %s of %s: %w", ref, url, err)
	}
	subject, _, _ := strings.Cut(commit.Message, "\n")
	return &Result{Ref: shortName(name), Commit: commit.Hash.String(), Message: subject, Author: commit.Author.Name}, nil
}

// resolve finds the remote ref (full name) and hash for ref among the advertised refs.
func resolve(refs []*plumbing.Reference, ref Ref) (plumbing.ReferenceName, plumbing.Hash, error) {
	byName := map[plumbing.ReferenceName]plumbing.Hash{}
	for _, r := range refs {
		if r.Type() == plumbing.HashReference {
			byName[r.Name()] = r.Hash()
		}
	}
	switch {
	case ref.Commit != "":
		if len(ref.Commit) != 40 {
			for n, h := range byName {
				if strings.HasPrefix(h.String(), ref.Commit) {
					return n, h, nil
				}
			}
			return "", plumbing.ZeroHash, fmt.Errorf("%w: a short commit %s must be the head of a branch or tag; give all 40 characters", ErrRefNotFound, ref.Commit)
		}
		return plumbing.ReferenceName(ref.Commit), plumbing.NewHash(ref.Commit), nil
	case ref.Tag != "":
		n := plumbing.NewTagReferenceName(ref.Tag)
		if h, ok := byName[n]; ok {
			return n, h, nil
		}
		return "", plumbing.ZeroHash, fmt.Errorf("%w: no tag %s", ErrRefNotFound, ref.Tag)
	case ref.SemVer != "":
		c, err := semver.NewConstraint(ref.SemVer)
		if err != nil {
			return "", plumbing.ZeroHash, fmt.Errorf("%w: semver range %q: %v", ErrRefNotFound, ref.SemVer, err)
		}
		var best *semver.Version
		var bestName plumbing.ReferenceName
		for n := range byName {
			if !n.IsTag() {
				continue
			}
			v, err := semver.NewVersion(n.Short())
			if err != nil || !c.Check(v) {
				continue
			}
			if best == nil || v.GreaterThan(best) {
				best, bestName = v, n
			}
		}
		if best == nil {
			var tags []string
			for n := range byName {
				if n.IsTag() {
					tags = append(tags, n.Short())
				}
			}
			sort.Strings(tags)
			return "", plumbing.ZeroHash, fmt.Errorf("%w: no tag matches %q (tags: %s)", ErrRefNotFound, ref.SemVer, strings.Join(tags, ", "))
		}
		return bestName, byName[bestName], nil
	default:
		n := plumbing.NewBranchReferenceName(ref.branch())
		if h, ok := byName[n]; ok {
			return n, h, nil
		}
		return "", plumbing.ZeroHash, fmt.Errorf("%w: no branch %s", ErrRefNotFound, ref.branch())
	}
}

// commitOf reads a commit, peeling an annotated tag.
func commitOf(repo *git.Repository, h plumbing.Hash) (*object.Commit, error) {
	if tag, err := repo.TagObject(h); err == nil {
		return tag.Commit()
	}
	return repo.CommitObject(h)
}

func shortName(n plumbing.ReferenceName) string {
	if n.IsBranch() || n.IsTag() {
		return n.Short()
	}
	return n.String()
}

// classify turns transport errors into the package's kinds, keeping the message.
func classify(url string, err error) error {
	msg := strings.Join(strings.Fields(err.Error()), " ") // servers end bodies with newlines
	// A server whose host key is not the pinned one is refused like bad credentials: a person
	// must look (it may be an attack), retrying does not help.
	if errors.Is(err, transport.ErrAuthenticationRequired) || errors.Is(err, transport.ErrAuthorizationFailed) ||
		strings.Contains(msg, "knownhosts: key mismatch") || strings.Contains(msg, "knownhosts: key is unknown") {
		return fmt.Errorf("%w at %s: %s", ErrAuth, url, msg)
	}
	return fmt.Errorf("%w: %s: %s", ErrUnreachable, url, msg)
}

// Descends reports whether commit descends from (or is) ancestor, both in the cache. A
// branch whose new head does not descend from the old one was rewritten (force-pushed).
func (c *Cache) Descends(url, commit, ancestor string) (bool, error) {
	defer c.lock(url)()
	repo, err := c.open(url)
	if err != nil {
		return false, err
	}
	if commit == ancestor {
		return true, nil
	}
	head, err := repo.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		return false, err
	}
	old, err := repo.CommitObject(plumbing.NewHash(ancestor))
	if err != nil {
		// The old commit is not in the cache (a restarted hub with a fresh cache): it cannot
		// be checked, and not knowing is not evidence of a rewrite.
		return true, nil
	}
	return old.IsAncestor(head)
}
