package diffview_test

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ccm-fleet/ccm/cmd/internal/diffview"
	"github.com/ccm-fleet/ccm/protocol"
)

func TestWrite(t *testing.T) {
	d := &protocol.Diff{
		Changes: []protocol.Change{{Field: "mode", From: "0600", To: "0644"}, {Field: "ensure", From: "", To: "present"}},
		Content: "--- /f (current)\n+++ /f (desired)\n@@ -1 +1 @@\n-old\x1b[2J\n+new\n",
		Added:   []string{"/d/new"},
		Files:   []protocol.FileDiff{{Path: "/d/x", Summary: protocol.DiffSensitive}},
	}
	cases := []struct {
		name   string
		colour bool
		want   string
	}{
		{"plain", false, "  mode 0600 → 0644\n  ensure (none) → present\n  --- /f (current)\n  +++ /f (desired)\n  @@ -1 +1 @@\n  -old\\x1b[2J\n  +new\n  added /d/new\n  /d/x:\n    content differs; sensitive\n"},
		{"coloured", true, "  mode 0600 → 0644\n  ensure (none) → present\n  \x1b[31m--- /f (current)\x1b[0m\n  \x1b[32m+++ /f (desired)\x1b[0m\n  \x1b[36m@@ -1 +1 @@\x1b[0m\n  \x1b[31m-old\\x1b[2J\x1b[0m\n  \x1b[32m+new\x1b[0m\n  \x1b[32madded /d/new\x1b[0m\n  /d/x:\n    content differs; sensitive\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			diffview.Write(&b, d, "  ", c.colour)
			if b.String() != c.want {
				t.Fatalf("got:\n%q\nwant:\n%q", b.String(), c.want)
			}
		})
	}
}

func TestWriteNothing(t *testing.T) {
	var b bytes.Buffer
	diffview.Write(&b, nil, "", true)
	diffview.Write(&b, &protocol.Diff{}, "", true)
	if b.Len() != 0 {
		t.Fatalf("an empty diff printed %q", b.String())
	}
}

func TestColourOnlyOnATerminal(t *testing.T) {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if diffview.Colour(null, false) {
		t.Error("/dev/null is a character device but not a terminal")
	}
	if diffview.Colour(&bytes.Buffer{}, false) {
		t.Error("a buffer is not a terminal")
	}
	tty := openPTY(t)
	if !diffview.Colour(tty, false) {
		t.Error("a terminal gets colour")
	}
	if diffview.Colour(tty, true) {
		t.Error("--no-color turns it off")
	}
	t.Setenv("NO_COLOR", "1")
	if diffview.Colour(tty, false) {
		t.Error("NO_COLOR turns it off")
	}
}

// openPTY opens a new pseudo-terminal and returns its terminal side.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skip("no pseudo-terminals here:", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	return tty
}
