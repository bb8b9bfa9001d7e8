package main

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// terminalWidth returns the width in columns of w when w is a terminal,
// else 0 (no limit). $COLUMNS is the fallback when the size cannot be read.
func terminalWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return 0
	}
	if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
		return int(ws.Col)
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return 80
}

// wrapWidth returns a writer that passes text to w, wrapping every line
// longer than width runes at spaces when width is positive, so a report
// reads on a terminal without losing a character: a continuation line is
// indented four columns more than the line it continues, and a word (a
// request id, a path, a host name) is never split: one longer than the
// room left is put whole on a line of its own, and the terminal folds it.
// Lines end at "\n"; text without one is kept until the next write or
// Flush.
func wrapWidth(w io.Writer, width int) *lineWrapper {
	return &lineWrapper{w: w, width: width}
}

// lineWrapper is the writer wrapWidth returns.
type lineWrapper struct {
	w     io.Writer
	width int
	buf   []byte
}

// Write wraps and writes every complete line of p; it reports len(p)
// written unless the underlying writer fails.
func (l *lineWrapper) Write(p []byte) (int, error) {
	if l.width <= 0 {
		return l.w.Write(p)
	}
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := wrapLine(l.buf[:i], l.width)
		l.buf = l.buf[i+1:]
		if _, err := l.w.Write(append(line, '\n')); err != nil {
			return 0, err
		}
	}
}

// Flush writes what is left after the last "\n".
func (l *lineWrapper) Flush() error {
	if len(l.buf) == 0 {
		return nil
	}
	_, err := l.w.Write(wrapLine(l.buf, l.width))
	l.buf = nil
	return err
}

// continuationIndent is how much deeper than its line a continuation
// line starts.
const continuationIndent = 4

// wrapLine breaks line at spaces into lines of at most width runes where
// its words allow; every byte of line but the spaces at the breaks is
// kept, in order.
func wrapLine(line []byte, width int) []byte {
	if width <= 0 || utf8.RuneCount(line) <= width {
		return append([]byte(nil), line...)
	}
	lead := len(line) - len(bytes.TrimLeft(line, " "))
	indent := bytes.Repeat([]byte(" "), min(lead+continuationIndent, width/2))
	out := make([]byte, 0, len(line)+len(line)/width*(len(indent)+1))
	out = append(out, line[:lead]...)
	col := lead   // runes on the current output line
	fresh := true // nothing but the indent on the current line yet
	for _, word := range bytes.Split(line[lead:], []byte(" ")) {
		n := utf8.RuneCount(word)
		switch {
		case fresh:
		case col+1+n <= width:
			out = append(out, ' ')
			col++
		default:
			out = append(out, '\n')
			out = append(out, indent...)
			col = len(indent)
		}
		out = append(out, word...)
		col += n
		fresh = false
	}
	return out
}
