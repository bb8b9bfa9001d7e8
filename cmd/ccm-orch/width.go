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

// fitWidth returns w, or when width is positive a writer that cuts every
// line longer than width runes to width-1 runes and "…", so a report never
// wraps on a terminal. Lines end at "\n"; text without one is kept until
// the next write or Flush.
func fitWidth(w io.Writer, width int) *lineFitter {
	return &lineFitter{w: w, width: width}
}

// lineFitter is the writer fitWidth returns.
type lineFitter struct {
	w     io.Writer
	width int
	buf   []byte
}

// Write cuts and writes every complete line of p; it reports len(p)
// written unless the underlying writer fails.
func (l *lineFitter) Write(p []byte) (int, error) {
	if l.width <= 0 {
		return l.w.Write(p)
	}
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := fitLine(l.buf[:i], l.width)
		l.buf = l.buf[i+1:]
		if _, err := l.w.Write(append(line, '\n')); err != nil {
			return 0, err
		}
	}
}

// Flush writes what is left after the last "\n".
func (l *lineFitter) Flush() error {
	if len(l.buf) == 0 {
		return nil
	}
	_, err := l.w.Write(fitLine(l.buf, l.width))
	l.buf = nil
	return err
}

// fitLine cuts line to width runes, the last being "…", when it is longer.
func fitLine(line []byte, width int) []byte {
	if width <= 0 || utf8.RuneCount(line) <= width {
		return append([]byte(nil), line...)
	}
	out := make([]byte, 0, len(line))
	for n := 0; n < width-1; n++ {
		_, size := utf8.DecodeRune(line)
		out = append(out, line[:size]...)
		line = line[size:]
	}
	return append(out, "…"...)
}
