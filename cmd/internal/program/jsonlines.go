package program

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// maxLineBytes bounds a line JSONLines holds while waiting for its end; a
// longer one is written in pieces.
const maxLineBytes = 64 << 10

// JSONLines returns a writer to w for a program's stderr that, while
// enabled() says so (--log-format json), writes every line that is not
// already a JSON object as a JSON log record at level ERROR, its text as
// msg (a leading "name: " cut off), so that every line on the stream
// parses; otherwise lines pass unchanged. It exists for the lines printed
// outside the logger (the final error of a command).
func JSONLines(w io.Writer, name string, enabled func() bool) io.Writer {
	return &jsonLines{w: w, prefix: name + ": ", enabled: enabled}
}

type jsonLines struct {
	w       io.Writer
	prefix  string
	enabled func() bool

	// guards buf: loggers and the program may write at once
	mu  sync.Mutex
	buf []byte
}

func (j *jsonLines) Write(p []byte) (int, error) {
	if !j.enabled() {
		return j.w.Write(p)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.buf = append(j.buf, p...)
	for {
		i := bytes.IndexByte(j.buf, '\n')
		if i < 0 && len(j.buf) < maxLineBytes {
			return len(p), nil
		}
		if i < 0 {
			i = len(j.buf)
		}
		line := j.buf[:i]
		if err := j.writeLine(line); err != nil {
			return 0, err
		}
		j.buf = j.buf[min(i+1, len(j.buf)):]
		if len(j.buf) == 0 {
			return len(p), nil
		}
	}
}

// writeLine writes one line, as it is when it is a JSON object, else as
// a log record carrying it.
func (j *jsonLines) writeLine(line []byte) error {
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	if line[0] == '{' && json.Valid(line) {
		_, err := j.w.Write(append(append([]byte(nil), line...), '\n'))
		return err
	}
	msg := strings.TrimPrefix(string(line), j.prefix)
	slog.New(slog.NewJSONHandler(j.w, nil)).Error(msg)
	return nil
}
