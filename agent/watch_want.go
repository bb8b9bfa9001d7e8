package agent

import (
	"context"
	"os"
	"time"

	"github.com/ccm-fleet/ccm/resources/filetype"
)

// fileWant is what a watched file resource declares, read from the typed
// properties its run prepared: whether the file should exist, the
// checksum of its inline content ("" when the content is not declared
// inline) and its permission bits (when hasPerm).
type fileWant struct {
	absent   bool
	checksum string
	size     int64
	perm     os.FileMode
	hasPerm  bool
}

// wantOf is what a watched file resource declares; false for a
// directory, whose content is not judged.
func wantOf(fp *filetype.Properties) (fileWant, bool) {
	if fp.Ensure != filetype.EnsurePresent && fp.Ensure != filetype.EnsureAbsent {
		return fileWant{}, false
	}
	w := fileWant{absent: fp.Ensure == filetype.EnsureAbsent}
	content := fp.Content
	if content == nil {
		content = fp.Contents
	}
	if content != nil && fp.Source == "" {
		w.checksum, w.size = filetype.ChecksumBytes([]byte(*content)), int64(len(*content))
	}
	if fp.Mode != "" {
		if m, err := filetype.ParseMode(string(fp.Mode)); err == nil {
			w.perm, w.hasPerm = m.Perm(), true
		}
	}
	return w, true
}

// differs says whether the file at path is not what w declares. It is
// judged against the declaration, not against the state the run read back
// after its write: a change made between that write and the read-back
// would otherwise be taken for the run's own result and never repaired.
func (w fileWant) differs(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil {
		return !w.absent
	}
	if w.absent || !fi.Mode().IsRegular() {
		return true
	}
	if w.hasPerm && fi.Mode().Perm() != w.perm {
		return true
	}
	if w.checksum == "" || fi.Size() > maxVerifyBytes {
		return false
	}
	if fi.Size() != w.size {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sum, err := filetype.ChecksumFile(ctx, path)
	return err == nil && sum != w.checksum
}
