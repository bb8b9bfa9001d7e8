package codecheck

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// MaxTrackedBytes is the largest file the repository may track outside a
// testdata directory.
const MaxTrackedBytes = 2 << 20

// elfMagic opens every ELF file: a built binary.
var elfMagic = []byte{0x7f, 'E', 'L', 'F'}

// TrackedFiles lists the files git tracks under root (relative paths).
func TrackedFiles(root string) ([]string, error) {
	cmd := exec.Command("git", "-C", root, "ls-files", "-z")
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files in %s: %w", root, err)
	}
	var files []string
	for _, f := range bytes.Split(out, []byte{0}) {
		if len(f) > 0 {
			files = append(files, string(f))
		}
	}
	return files, nil
}

// CheckTracked reports each of files (relative to root) that is a built
// binary (ELF), anywhere, or larger than MaxTrackedBytes outside a
// testdata directory. A tracked file missing from the work tree (deleted,
// not yet committed) is skipped.
func CheckTracked(root string, files []string) ([]string, error) {
	var found []string
	for _, rel := range files {
		f, err := os.Open(filepath.Join(root, rel))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		head := make([]byte, len(elfMagic))
		n, _ := io.ReadFull(f, head)
		info, err := f.Stat()
		f.Close()
		if err != nil {
			return nil, err
		}
		switch {
		case n == len(elfMagic) && bytes.Equal(head, elfMagic):
			found = append(found, rel+": a built binary (ELF); build it, do not track it")
		case info.Size() > MaxTrackedBytes && !inTestdata(rel):
			found = append(found, fmt.Sprintf("%s: %d bytes, over the %d a tracked file outside testdata/ may have", rel, info.Size(), MaxTrackedBytes))
		}
	}
	return found, nil
}

func inTestdata(rel string) bool {
	return slices.Contains(strings.Split(filepath.ToSlash(rel), "/"), "testdata")
}
