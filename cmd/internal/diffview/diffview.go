package diffview

import (
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/ccm-fleet/ccm/protocol"
)

// ANSI colours of added, removed and hunk header lines.
const (
	green = "\x1b[32m"
	red   = "\x1b[31m"
	cyan  = "\x1b[36m"
	reset = "\x1b[0m"
)

// Colour reports whether output to w is coloured: only when w is a
// terminal, NO_COLOR is unset or empty and noColor (--no-color) is false.
func Colour(w io.Writer, noColor bool) bool {
	if noColor || os.Getenv("NO_COLOR") != "" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	// A terminal answers the termios query; /dev/null, also a character
	// device, does not.
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// Write prints d, every line starting with indent.
func Write(w io.Writer, d *protocol.Diff, indent string, colour bool) {
	if d.Empty() {
		return
	}
	for _, c := range d.Changes {
		fmt.Fprintf(w, "%s%s\n", indent, Change(c))
	}
	if d.Summary != "" {
		fmt.Fprintf(w, "%s%s\n", indent, d.Summary)
	}
	writeText(w, d.Content, indent, colour)
	if d.Truncated {
		fmt.Fprintf(w, "%s(diff truncated at %d bytes)\n", indent, protocol.MaxDiffBytes)
	}
	for _, p := range d.Added {
		fmt.Fprintf(w, "%s%s\n", indent, paint("added "+p, green, colour))
	}
	for _, p := range d.Purged {
		fmt.Fprintf(w, "%s%s\n", indent, paint("purged "+p, red, colour))
	}
	for _, f := range d.Files {
		fmt.Fprintf(w, "%s%s:\n", indent, f.Path)
		if f.Summary != "" {
			fmt.Fprintf(w, "%s  %s\n", indent, f.Summary)
		}
		writeText(w, f.Content, indent+"  ", colour)
		if f.Truncated {
			fmt.Fprintf(w, "%s  (diff truncated)\n", indent)
		}
	}
	if d.Omitted > 0 {
		fmt.Fprintf(w, "%s(%d more files not shown)\n", indent, d.Omitted)
	}
}

// Change words one change: "mode 0600 → 0644"; an empty side shows as
// "(none)".
func Change(c protocol.Change) string {
	from, to := c.From, c.To
	if from == "" {
		from = "(none)"
	}
	if to == "" {
		to = "(none)"
	}
	return fmt.Sprintf("%s %s → %s", c.Field, from, to)
}

// writeText prints a unified diff line by line, colouring +, - and @@
// lines (not the --- / +++ headers' meaning, which are coloured like
// their side). Control characters other than tab are shown escaped so
// that a diff cannot drive the terminal.
func writeText(w io.Writer, text, indent string, colour bool) {
	if text == "" {
		return
	}
	for _, l := range strings.SplitAfter(strings.TrimSuffix(text, "\n"), "\n") {
		l = safe(strings.TrimSuffix(l, "\n"))
		switch {
		case strings.HasPrefix(l, "@@"):
			l = paint(l, cyan, colour)
		case strings.HasPrefix(l, "+"):
			l = paint(l, green, colour)
		case strings.HasPrefix(l, "-"):
			l = paint(l, red, colour)
		}
		fmt.Fprintf(w, "%s%s\n", indent, l)
	}
}

func paint(s, c string, colour bool) string {
	if !colour {
		return s
	}
	return c + s + reset
}

// safe escapes control characters but tab.
func safe(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isControl(r) {
			fmt.Fprintf(&b, "\\x%02x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isControl(r rune) bool { return r != '\t' && (r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0) }
