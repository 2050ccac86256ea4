package gitsource

import (
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// MaxTreeBytes bounds what one read of a commit may load: a Bundle's source is manifests,
// not a monorepo's binaries. Ignore patterns keep the rest out.
const MaxTreeBytes = 64 << 20

// Files returns the files of a cached commit below dir ("" or "." for the whole tree), by
// path relative to the repository root, leaving out what the ignore patterns (gitignore
// syntax) match.
func (c *Cache) Files(url, commit, dir string, ignore []string) (map[string][]byte, error) {
	defer c.lock(url)()
	repo, err := c.open(url)
	if err != nil {
		return nil, err
	}
	co, err := repo.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		return nil, fmt.Errorf("commit %s of %s is not fetched: %w", short(commit), url, err)
	}
	tree, err := co.Tree()
	if err != nil {
		return nil, err
	}
	dir = strings.Trim(path.Clean("/"+dir), "/")
	if dir != "" {
		if tree, err = tree.Tree(dir); err != nil {
			return nil, fmt.Errorf("path %q at commit %s of %s: %w", dir, short(commit), url, err)
		}
	}
	var patterns []gitignore.Pattern
	for _, p := range ignore {
		patterns = append(patterns, gitignore.ParsePattern(p, nil))
	}
	m := gitignore.NewMatcher(patterns)
	out := map[string][]byte{}
	total := 0
	err = tree.Files().ForEach(func(f *object.File) error {
		p := f.Name
		if dir != "" {
			p = dir + "/" + p
		}
		if m.Match(strings.Split(p, "/"), false) {
			return nil
		}
		total += int(f.Size)
		if total > MaxTreeBytes {
			return fmt.Errorf("more than %d MiB below %q at commit %s: narrow the path or add ignore patterns", MaxTreeBytes>>20, dir, short(commit))
		}
		r, err := f.Reader()
		if err != nil {
			return err
		}
		defer r.Close()
		b, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		out[p] = b
		return nil
	})
	return out, err
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}
