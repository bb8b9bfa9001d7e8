package scaffoldchoria

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"syscall"

	"github.com/choria-io/scaffold"

	"github.com/ccm-fleet/ccm/providers/internal/safefs"
)

// maxTreeDepth bounds how deep the target is walked when looking for files
// to purge.
const maxTreeDepth = 256

// openTarget opens the target directory through safefs (from "/" with
// O_NOFOLLOW, links followed only when root or the agent's user owns
// them). A missing target gives nil and no error; one that is not a
// directory ErrTargetNotDirectory.
func openTarget(target string) (*safefs.Dir, error) {
	d, err := safefs.Open(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.Is(err, syscall.ENOTDIR):
		return nil, fmt.Errorf("scaffold %s: %w", target, ErrTargetNotDirectory)
	case err != nil:
		return nil, fmt.Errorf("scaffold %s: %w", target, err)
	}
	return d, nil
}

// place compares the tree rendered in stage (the private directory the
// library rendered into) with the target and, unless noop, writes every
// added or updated file into the target through handles: each directory is
// opened (or made, mode 0755) from tgt with O_NOFOLLOW, the file is written
// to a temporary file created there with O_EXCL|O_NOFOLLOW, given the
// staged file's mode through its descriptor and renamed within the same
// handle. It returns every file with its action, removals (files in the
// target that were not rendered) included, sorted by path. tgt is nil
// when the target does not exist (only under noop).
func place(stage string, tgt *safefs.Dir, noop bool) ([]scaffold.ManagedFile, error) {
	var result []scaffold.ManagedFile
	rendered := map[string]bool{}
	err := filepath.WalkDir(stage, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(stage, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case de.IsDir():
			if noop {
				return nil
			}
			d, err := tgt.Sub(rel, true, 0o755)
			if err != nil {
				return err
			}
			return d.Close()
		case !de.Type().IsRegular():
			return fmt.Errorf("rendered %s is not a regular file", rel)
		}
		rendered[rel] = true
		action, err := placeFile(p, rel, tgt, noop)
		if err != nil {
			return err
		}
		result = append(result, scaffold.ManagedFile{Path: rel, Action: action})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if tgt != nil {
		if err := unrendered(tgt, "", rendered, 0, &result); err != nil {
			return nil, err
		}
	}
	sort.Slice(result, func(i, j int) bool { return result[i].Path < result[j].Path })
	return result, nil
}

// placeFile decides and, unless noop, applies the action for one rendered
// file.
func placeFile(staged, rel string, tgt *safefs.Dir, noop bool) (scaffold.FileAction, error) {
	want, err := os.ReadFile(staged)
	if err != nil {
		return "", err
	}
	sfi, err := os.Lstat(staged)
	if err != nil {
		return "", err
	}
	if tgt == nil {
		return scaffold.FileActionAdd, nil
	}
	dir, base := path.Split(rel)
	d, err := tgt.Sub(dir, !noop, 0o755)
	if noop && errors.Is(err, fs.ErrNotExist) {
		return scaffold.FileActionAdd, nil
	}
	if err != nil {
		return "", err
	}
	defer d.Close()
	action := scaffold.FileActionAdd
	fi, err := d.Lstat(base)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return "", err
	case fi.IsDir():
		return "", fmt.Errorf("%s: a directory is where a file is rendered: %w", d.Join(base), syscall.EISDIR)
	case fi.Mode().IsRegular():
		same, err := sameContent(d, base, want)
		if err != nil {
			return "", err
		}
		if same {
			return scaffold.FileActionEqual, nil
		}
		action = scaffold.FileActionUpdate
	default:
		action = scaffold.FileActionUpdate // a link or special file is replaced, never followed
	}
	if noop {
		return action, nil
	}
	return action, writeAtomic(d, base, want, sfi.Mode().Perm())
}

// sameContent compares base in d, opened with O_NOFOLLOW, with want.
func sameContent(d *safefs.Dir, base string, want []byte) (bool, error) {
	f, err := d.Open(base)
	if err != nil {
		return false, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, int64(len(want))+1)); err != nil {
		return false, err
	}
	sum := sha256.Sum256(want)
	return bytes.Equal(h.Sum(nil), sum[:]), nil
}

// writeAtomic writes content to base in d by a temporary file in d renamed
// over it.
func writeAtomic(d *safefs.Dir, base string, content []byte, perm fs.FileMode) (err error) {
	tmp, tmpName, err := d.CreateTemp(".scaffold-tmp-")
	if err != nil {
		return err
	}
	renamed := false
	defer func() {
		if !renamed {
			_ = tmp.Close()
			_ = d.Remove(tmpName)
		}
	}()
	if _, err := tmp.Write(content); err != nil {
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := d.Rename(tmpName, base); err != nil {
		return err
	}
	renamed = true
	return nil
}

// unrendered appends a removal for every non-directory below d (at rel in
// the target) that was not rendered, descending with O_NOFOLLOW.
func unrendered(d *safefs.Dir, rel string, rendered map[string]bool, depth int, out *[]scaffold.ManagedFile) error {
	if depth > maxTreeDepth {
		return fmt.Errorf("%s: more than %d directories deep", d.Path(), maxTreeDepth)
	}
	names, err := d.ReadDirNames()
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, n := range names {
		p := path.Join(rel, n)
		fi, err := d.Lstat(n)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			if !rendered[p] {
				*out = append(*out, scaffold.ManagedFile{Path: p, Action: scaffold.FileActionRemove})
			}
			continue
		}
		sub, err := d.OpenDir(n)
		if err != nil {
			return err
		}
		err = unrendered(sub, p, rendered, depth+1, out)
		_ = sub.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// removeIn removes the file rel below tgt through a handle on its
// directory; a missing file is not an error.
func removeIn(tgt *safefs.Dir, rel string) error {
	dir, base := path.Split(rel)
	d, err := tgt.Sub(dir, false, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Remove(base); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// existsIn reports whether something is at rel below tgt (not following a
// link there).
func existsIn(tgt *safefs.Dir, rel string) bool {
	dir, base := path.Split(rel)
	d, err := tgt.Sub(dir, false, 0)
	if err != nil {
		return false
	}
	defer d.Close()
	_, err = d.Lstat(base)
	return err == nil
}
