package nolinks_test

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ccm-fleet/ccm/internal/nolinks"
)

// openFiles counts this process's open descriptors.
func openFiles(t *testing.T) int {
	t.Helper()
	names, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(names)
}

func TestOpenDir(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "a", "b"), 0o755))
	must(os.WriteFile(filepath.Join(root, "a", "file"), nil, 0o644))
	must(os.Symlink(filepath.Join(root, "a"), filepath.Join(root, "link")))
	must(os.Symlink(filepath.Join(root, "a", "b"), filepath.Join(root, "a", "tob")))

	cases := []struct {
		path string
		ok   bool
	}{
		{"/", true},
		{root, true},
		{filepath.Join(root, "a", "b"), true},
		{filepath.Join(root, "link"), false},           // the last component is a link
		{filepath.Join(root, "link", "b"), false},      // a link on the way
		{filepath.Join(root, "a", "tob"), false},       // a link to a directory
		{filepath.Join(root, "a", "missing"), false},   // missing
		{filepath.Join(root, "a", "file"), false},      // not a directory
		{filepath.Join(root, "a", "file", "x"), false}, // a file on the way
		{"/proc/self/cwd", false},                      // a magic link
	}
	before := openFiles(t)
	for _, c := range cases {
		fd, ok := nolinks.OpenDir(c.path)
		if ok != c.ok {
			t.Errorf("OpenDir(%s): ok %v, want %v", c.path, ok, c.ok)
		}
		if !ok {
			if fd != -1 {
				t.Errorf("OpenDir(%s) refused but gave fd %d", c.path, fd)
			}
			continue
		}
		var got, want unix.Stat_t
		must(unix.Fstat(fd, &got))
		must(unix.Stat(c.path, &want))
		if got.Dev != want.Dev || got.Ino != want.Ino {
			t.Errorf("OpenDir(%s) opened another directory", c.path)
		}
		must(unix.Close(fd))
	}
	if after := openFiles(t); after != before {
		t.Errorf("%d descriptors open after, %d before: a refusal left one open", after, before)
	}
}
