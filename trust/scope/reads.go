package scope

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ccm-fleet/ccm/resources/catalog"
)

// MaxTreeEntries bounds the entries of a directory tree a read scope
// walks to find the links below it.
const MaxTreeEntries = 10000

// errTreeTooLarge is the reason a tree too large to walk is refused.
var errTreeTooLarge = fmt.Errorf("it holds more than %d entries: too many to judge the links below it", MaxTreeEntries)

// readRules are the rules that judge reads: file.read_paths, else
// file.paths; deny.file.read_paths, else deny.file.paths.
func (s *Scope) readRules() (allow []entry, allowRule string, deny []entry) {
	allow, allowRule = s.allow.reads, "file.read_paths"
	if len(allow) == 0 && len(s.allow.paths) > 0 {
		allow, allowRule = s.allow.paths, "file.paths"
	}
	deny = s.deny.reads
	if len(deny) == 0 {
		deny = s.deny.paths
	}
	return allow, allowRule, deny
}

// reads judges a path the resource reads, where it leads on this host
// (every link followed, ".." taken physically, as the directory-handle
// walk of the providers goes): inside a read prefix and nowhere inside a
// deny one. A tree (a scaffold's source or target) is read below at will:
// a deny prefix below it refuses it, and so does a link below it that
// leads where the signer may not read. A relative path joined to the
// request's own working directory that stays inside it reads only the
// files the request brought.
func (s *Scope) reads(r Resolver, o catalog.HostObject, out []Decision) []Decision {
	allow, allowRule, deny := s.readRules()
	if len(allow) == 0 && len(deny) == 0 && !s.noopOnly {
		return out
	}
	d := Decision{Check: o.Check + " (read)", Value: o.Value, Rule: allowRule}
	full, err := r.resolve(o.Value, true)
	if err != nil {
		d.Reason = err.Error()
		return append(out, d)
	}
	if full != o.Value {
		d.Value += fmt.Sprintf(" (leads to %s)", full)
	}
	if o.Base != "" {
		if base, err := r.resolve(o.Base, true); err == nil && within(full, base) && within(o.Value, o.Base) {
			var links []string
			if o.Tree {
				links, err = treeLinks(full)
			}
			if err == nil && len(links) == 0 {
				d.Allowed, d.Rule = true, "the request's own files (below its working directory "+o.Base+")"
				return append(out, d)
			}
		}
	}
	if !s.readAllowed(r, &d, allow, allowRule, deny, o.Value, full, o.Tree) {
		return append(out, d)
	}
	if o.Tree {
		links, err := treeLinks(full)
		if err != nil {
			d.Allowed, d.Reason = false, err.Error()
			return append(out, d)
		}
		for _, l := range links {
			to, err := r.resolve(l, true)
			if err != nil {
				d.Allowed, d.Reason = false, fmt.Sprintf("the link %s below it: %s", l, err)
				return append(out, d)
			}
			ld := Decision{}
			if !s.readAllowed(r, &ld, allow, allowRule, deny, l, to, false) {
				d.Allowed, d.Rule = false, ld.Rule
				d.Reason = fmt.Sprintf("the link %s below it leads to %s", l, to)
				return append(out, d)
			}
		}
	}
	return append(out, d)
}

// readAllowed decides one read of the path p, which leads to full, into d
// (its Rule, Reason and Allowed).
func (s *Scope) readAllowed(r Resolver, d *Decision, allow []entry, allowRule string, deny []entry, p, full string, tree bool) bool {
	forms := []string{p, full}
	for _, e := range deny {
		if r.holds(e, forms...) {
			d.Rule = e.String()
			return false
		}
		if tree && r.below(e, forms...) {
			d.Rule = e.String()
			d.Reason = "it is below this directory, which the resource reads at will"
			return false
		}
	}
	if len(allow) == 0 {
		if s.noopOnly {
			d.Rule = "file.read_paths (noop_only signer: reads must be listed)"
			d.Reason = "a dry run's diff shows what it reads"
			return false
		}
		d.Allowed, d.Rule = true, "file.read_paths (not restricted)"
		return true
	}
	for _, e := range allow {
		if r.holds(e, full) {
			d.Allowed, d.Rule = true, e.String()
			return true
		}
	}
	d.Rule = allowRule + " (no prefix holds " + full + ": default deny)"
	return false
}

// holds reports whether one of paths is inside entry e, as written or
// with its own links resolved.
func (r Resolver) holds(e entry, paths ...string) bool {
	rp, err := r.resolve(e.value, true)
	for _, x := range paths {
		if within(x, e.value) || (err == nil && within(x, rp)) {
			return true
		}
	}
	return false
}

// treeLinks lists the symbolic links below the directory dir (not
// following them), walking at most MaxTreeEntries entries. A dir that is
// not a directory, or does not exist, has none.
func treeLinks(dir string) ([]string, error) {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return nil, nil
	}
	var links []string
	n := 0
	err = filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			// What cannot be listed cannot be read by the resource either.
			if de != nil && de.IsDir() && p != dir {
				return fs.SkipDir
			}
			return nil
		}
		if n++; n > MaxTreeEntries {
			return errTreeTooLarge
		}
		if de.Type()&fs.ModeSymlink != 0 {
			links = append(links, p)
		}
		return nil
	})
	if errors.Is(err, errTreeTooLarge) {
		return nil, err
	}
	return links, nil
}
