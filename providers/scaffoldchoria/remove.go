package scaffoldchoria

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources/scaffoldtype"
)

// Remove deletes the files the scaffold manages (state's Changed, then
// Stable), then every directory below the target that became empty, deepest
// first, then the target itself when it is empty. Purged files are never
// touched. A file or directory that cannot be removed is logged and the rest
// still go; the caller's status check reports what is left. A listed path
// that is not absolute or not inside the target fails before anything is
// removed.
func (p *Provider) Remove(ctx context.Context, props *scaffoldtype.Properties, state *protocol.ScaffoldState) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("scaffold %s: %w", props.Name, err)
	}
	if state == nil || state.Metadata == nil {
		return nil
	}
	target := props.Name
	files := make([]string, 0, len(state.Metadata.Changed)+len(state.Metadata.Stable))
	files = append(files, state.Metadata.Changed...)
	files = append(files, state.Metadata.Stable...)
	for _, f := range files {
		if !filepath.IsAbs(f) {
			return fmt.Errorf("scaffold %s: remove %q: not an absolute path", target, f)
		}
		if !inside(target, f) {
			return fmt.Errorf("scaffold %s: remove %s: %w", target, f, ErrOutsideTarget)
		}
	}

	dirs := map[string]bool{}
	for _, f := range files {
		err := os.Remove(f)
		switch {
		case err == nil:
			p.log.Debug("removed scaffold file", "scaffold", target, "file", f)
		case errors.Is(err, fs.ErrNotExist):
		default:
			p.log.Error("could not remove scaffold file", "scaffold", target, "file", f, "error", err)
		}
		dirs[filepath.Dir(f)] = true
	}

	p.removeEmptyDirs(target, dirs)

	if err := os.Remove(target); err != nil {
		p.log.Debug("scaffold target kept", "scaffold", target, "error", err)
	}
	return nil
}

// removeEmptyDirs removes tracked directories strictly below target that are
// empty, deepest first, tracking each removed directory's parent, until a
// pass removes nothing.
func (p *Provider) removeEmptyDirs(target string, dirs map[string]bool) {
	for {
		candidates := make([]string, 0, len(dirs))
		for d := range dirs {
			if inside(target, d) {
				candidates = append(candidates, d)
			}
		}
		sort.Slice(candidates, func(i, j int) bool {
			di, dj := strings.Count(candidates[i], string(filepath.Separator)), strings.Count(candidates[j], string(filepath.Separator))
			if di != dj {
				return di > dj
			}
			return candidates[i] < candidates[j]
		})

		removed := false
		for _, d := range candidates {
			if !isEmptyDir(d) {
				continue
			}
			delete(dirs, d)
			if err := os.Remove(d); err != nil {
				p.log.Error("could not remove empty scaffold directory", "scaffold", target, "dir", d, "error", err)
				continue
			}
			p.log.Debug("removed empty scaffold directory", "scaffold", target, "dir", d)
			dirs[filepath.Dir(d)] = true
			removed = true
		}
		if !removed {
			return
		}
	}
}

func isEmptyDir(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	return len(names) == 0 && errors.Is(err, io.EOF)
}
