package archivehttp

import (
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"
)

// entryKind is what an archive entry creates.
type entryKind int

const (
	kindFile entryKind = iota
	kindDir
	kindSymlink
	kindHardlink
)

func (k entryKind) String() string {
	return [...]string{"file", "directory", "symlink", "hardlink"}[k]
}

// rawEntry is an entry as a source reads it, before any check.
type rawEntry struct {
	name string
	kind entryKind
	// special names an entry type that is never extracted ("character
	// device", "fifo", …); kind is meaningless when it is set.
	special string
	link    string
	mode    fs.FileMode
	size    int64
	mtime   time.Time
}

// entry is a checked entry: name is clean, relative and slash-separated
// ("" is extract_parent itself), mode holds permission bits only.
type entry struct {
	name  string
	kind  entryKind
	link  string // symlink target as given; hardlink target as a clean name
	mode  fs.FileMode
	size  int64
	mtime time.Time
	// at is name with its directory resolved through the archive's
	// symlinks, and linkAt the same of a hardlink's target: the writer
	// walks these with no link followed on disk.
	at, linkAt string
}

// maxLinkDepth bounds symlink resolution, as the kernel's ELOOP limit does.
const maxLinkDepth = 40

// unsafe returns an ErrUnsafeEntry error naming the entry and the problem.
func unsafe(name, format string, args ...any) error {
	return fmt.Errorf("%w %q: %s", ErrUnsafeEntry, name, fmt.Sprintf(format, args...))
}

// cleanName checks an archive member name and returns it clean and relative.
func cleanName(name string) (string, error) {
	switch {
	case name == "":
		return "", unsafe(name, "empty name")
	case strings.ContainsRune(name, 0):
		return "", unsafe(name, "name contains a NUL byte")
	case strings.HasPrefix(name, "/"):
		return "", unsafe(name, "absolute path")
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", unsafe(name, "path contains a parent directory (..) component")
		}
	}
	clean := path.Clean(name)
	if clean == "." {
		return "", nil
	}
	return clean, nil
}

// normalise checks the parts of one entry that need no other entry.
func normalise(r *rawEntry) (*entry, error) {
	if r.special != "" {
		return nil, unsafe(r.name, "%s entries are not extracted", r.special)
	}
	name, err := cleanName(r.name)
	if err != nil {
		return nil, err
	}
	e := &entry{name: name, kind: r.kind, mode: r.mode & fs.ModePerm, size: r.size, mtime: r.mtime}
	if name == "" && r.kind != kindDir {
		return nil, unsafe(r.name, "a %s cannot replace the extraction directory", r.kind)
	}
	switch r.kind {
	case kindSymlink:
		switch {
		case r.link == "":
			return nil, unsafe(r.name, "symlink with an empty target")
		case strings.ContainsRune(r.link, 0):
			return nil, unsafe(r.name, "symlink target contains a NUL byte")
		case strings.HasPrefix(r.link, "/"):
			return nil, unsafe(r.name, "symlink to absolute path %q", r.link)
		}
		e.link = r.link
	case kindHardlink:
		target, err := cleanName(r.link)
		if err != nil {
			return nil, unsafe(r.name, "hardlink to %q outside the extraction directory", r.link)
		}
		e.link = target
	}
	if r.size < 0 {
		return nil, unsafe(r.name, "negative size")
	}
	return e, nil
}

// checker validates the entries of one archive against each other and the
// limits, before anything is written.
type checker struct {
	maxEntries int
	maxBytes   int64
	count      int
	total      int64
	links      map[string]string // symlink name -> target
	files      map[string]bool   // regular files seen so far
	entries    []*entry
}

func newChecker(maxEntries int, maxBytes int64) *checker {
	return &checker{maxEntries: maxEntries, maxBytes: maxBytes, links: map[string]string{}, files: map[string]bool{}}
}

// add checks one entry on its own and against the limits and earlier
// entries (hardlinks must point to an earlier regular file), and records it.
func (c *checker) add(r *rawEntry) error {
	c.count++
	if c.count > c.maxEntries {
		return fmt.Errorf("%w: more than %d entries", ErrExtractLimit, c.maxEntries)
	}
	e, err := normalise(r)
	if err != nil {
		return err
	}
	if e.kind == kindFile {
		c.total += e.size
		if c.total > c.maxBytes || c.total < 0 {
			return fmt.Errorf("%w: more than %d bytes of content", ErrExtractLimit, c.maxBytes)
		}
	}
	if e.kind == kindHardlink && !c.files[e.link] {
		return unsafe(r.name, "hardlink to %q, which is not a file earlier in the archive", r.link)
	}
	switch e.kind {
	case kindSymlink:
		c.links[e.name] = e.link
		delete(c.files, e.name)
	case kindFile, kindHardlink:
		c.files[e.name] = true
		delete(c.links, e.name)
	case kindDir:
		delete(c.files, e.name)
		delete(c.links, e.name)
	}
	c.entries = append(c.entries, e)
	return nil
}

// finish checks what needs every entry: no entry's parent directory and no
// symlink's or hardlink's target resolves, through the archive's symlinks,
// outside the extraction directory. It returns the checked entries.
func (c *checker) finish() ([]*entry, error) {
	for _, e := range c.entries {
		if e.name == "" {
			continue
		}
		dir, ok := c.resolve(path.Dir(e.name), 0)
		if !ok {
			return nil, unsafe(e.name, "its directory resolves outside the extraction directory through a symlink")
		}
		e.at = path.Join(path.Join(dir...), path.Base(e.name))
		switch e.kind {
		case kindSymlink:
			if _, ok := c.resolve(path.Dir(e.name)+"/"+e.link, 0); !ok {
				return nil, unsafe(e.name, "symlink to %q resolves outside the extraction directory", e.link)
			}
		case kindHardlink:
			dir, ok := c.resolve(path.Dir(e.link), 0)
			if !ok {
				return nil, unsafe(e.name, "hardlink to %q resolves outside the extraction directory", e.link)
			}
			e.linkAt = path.Join(path.Join(dir...), path.Base(e.link))
		}
	}
	return c.entries, nil
}

// resolve follows p, relative to the extraction directory, through the
// archive's symlinks and reports the resolved components, or false when it
// leaves the directory, meets an absolute target or loops.
func (c *checker) resolve(p string, depth int) ([]string, bool) {
	if depth > maxLinkDepth {
		return nil, false
	}
	var cur []string
	for _, part := range strings.Split(p, "/") {
		switch part {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return nil, false
			}
			cur = cur[:len(cur)-1]
			continue
		}
		cur = append(cur, part)
		target, ok := c.links[strings.Join(cur, "/")]
		if !ok {
			continue
		}
		if strings.HasPrefix(target, "/") {
			return nil, false
		}
		parent := strings.Join(cur[:len(cur)-1], "/")
		if cur, ok = c.resolve(parent+"/"+target, depth+1); !ok {
			return nil, false
		}
	}
	return cur, true
}

// sameEntry reports whether the extraction pass read what the check pass saw.
func sameEntry(a, b *entry) bool {
	return a.name == b.name && a.kind == b.kind && a.link == b.link && a.mode == b.mode && a.size == b.size
}
