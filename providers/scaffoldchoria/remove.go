package scaffoldchoria

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/internal/safefs"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/scaffoldtype"
	"log/slog"
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

	tgt, err := openTarget(target)
	if err != nil || tgt == nil {
		return err
	}
	defer tgt.Close()

	log := resources.Logger(ctx, p.log)
	dirs := map[string]bool{}
	for _, f := range files {
		rel, err := filepath.Rel(target, f)
		if err != nil {
			return fmt.Errorf("scaffold %s: remove %s: %w", target, f, err)
		}
		rel = filepath.ToSlash(rel)
		if err := removeIn(tgt, rel); err != nil {
			log.Error("could not remove scaffold file", "scaffold", target, "file", f, "error", err)
		} else {
			log.Debug("removed scaffold file", "scaffold", target, "file", f)
		}
		dirs[path.Dir(rel)] = true
	}

	removeEmptyDirs(log, tgt, target, dirs)

	parent, base, err := safefs.OpenParent(target)
	if err == nil {
		err = parent.RemoveDir(base)
		_ = parent.Close()
	}
	if err != nil {
		log.Debug("scaffold target kept", "scaffold", target, "error", err)
	}
	return nil
}

// removeEmptyDirs removes tracked directories (relative to the target)
// strictly below the target that are empty, deepest first, tracking each
// removed directory's parent, until a pass removes nothing. Each is removed
// with rmdir relative to a handle on its parent, opened from tgt with
// O_NOFOLLOW; a directory that is not empty is kept.
func removeEmptyDirs(log *slog.Logger, tgt *safefs.Dir, target string, dirs map[string]bool) {
	for range maxTreeDepth + 1 {
		candidates := make([]string, 0, len(dirs))
		for d := range dirs {
			if d != "." && d != "" && filepath.IsLocal(d) {
				candidates = append(candidates, d)
			}
		}
		sort.Slice(candidates, func(i, j int) bool {
			di, dj := strings.Count(candidates[i], "/"), strings.Count(candidates[j], "/")
			if di != dj {
				return di > dj
			}
			return candidates[i] < candidates[j]
		})

		removed := false
		for _, d := range candidates {
			delete(dirs, d)
			parent, err := tgt.Sub(path.Dir(d), false, 0)
			if err != nil {
				continue
			}
			err = parent.RemoveDir(path.Base(d))
			_ = parent.Close()
			switch {
			case err == nil:
			case errors.Is(err, syscall.ENOTEMPTY), errors.Is(err, syscall.EEXIST), errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
				continue
			default:
				log.Error("could not remove empty scaffold directory", "scaffold", target, "dir", path.Join(target, d), "error", err)
				continue
			}
			log.Debug("removed empty scaffold directory", "scaffold", target, "dir", path.Join(target, d))
			dirs[path.Dir(d)] = true
			removed = true
		}
		if !removed {
			return
		}
	}
}
