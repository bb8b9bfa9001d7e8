package agent

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// readReplyLocked reads e's reply back from its line in the file; nil
// when it has none or the line no longer reads as e's (the answer is then
// "not known here", never another request's).
func (c *replayCache) readReplyLocked(e *replayEntry) json.RawMessage {
	if e.replyLen == 0 || c.file == nil {
		return nil
	}
	_, reply, _ := readBack(c.file, e)
	return reply
}

// readBack reads e's line from r, and its reply, when the line is still
// e's with a reply of the length kept.
func readBack(r io.ReaderAt, e *replayEntry) (line []byte, reply json.RawMessage, ok bool) {
	line = make([]byte, e.line.n)
	if _, err := r.ReadAt(line, e.line.off); err != nil {
		return nil, nil, false
	}
	var back replayEntry
	if json.Unmarshal(line, &back) != nil || back.ID != e.ID || len(back.Reply) != e.replyLen {
		return nil, nil, false
	}
	return line, back.Reply, true
}

// purgeLocked drops expired entries.
func (c *replayCache) purgeLocked(now time.Time) {
	for id, e := range c.entries {
		if !e.Expires.After(now) {
			c.bytes -= e.size()
			delete(c.entries, id)
		}
	}
}

// appendLocked writes e as one line, rewriting the file first when it
// holds more than twice the live entries.
func (c *replayCache) appendLocked(e *replayEntry) error {
	if c.fileBytes > 1<<20 && c.fileBytes > 2*c.bytes {
		if err := c.rewriteLocked(); err != nil {
			return err
		}
	}
	b, err := encodeReplayLine(e)
	if err != nil {
		return fmt.Errorf("replay cache: %w", err)
	}
	e.line = fileSpan{off: c.fileBytes, n: len(b)}
	b = append(b, '\n')
	if _, err := c.file.Write(b); err != nil {
		return fmt.Errorf("replay cache %s: %w", c.path, err)
	}
	c.fileBytes += int64(len(b))
	return nil
}

// rewriteLocked replaces the file with the live entries (a temporary file
// renamed into place) and opens it for appending.
func (c *replayCache) rewriteLocked() error {
	tmp := c.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("replay cache %s: %w", c.path, err)
	}
	old, err := os.Open(c.path)
	if err != nil {
		_ = f.Close()
		_ = os.Remove(tmp)
		return fmt.Errorf("replay cache %s: %w", c.path, err)
	}
	defer old.Close()
	w := bufio.NewWriter(f)
	var n int64
	spans := make(map[string]fileSpan, len(c.entries))
	for _, e := range c.entries {
		line, ok := rewriteLine(old, e)
		if !ok {
			// The line no longer reads back: keep the entry without its
			// reply and who sent it.
			bare := *e
			bare.replyLen, bare.whoLen = 0, 0
			if line, err = json.Marshal(&bare); err != nil {
				continue
			}
			c.bytes -= int64(e.replyLen + e.whoLen)
			e.replyLen, e.whoLen = 0, 0
		}
		spans[e.ID] = fileSpan{off: n, n: len(line)}
		n += int64(len(line)) + 1
		_, _ = w.Write(line)
		_ = w.WriteByte('\n')
	}
	err = errors.Join(w.Flush(), f.Close())
	if err == nil {
		err = os.Rename(tmp, c.path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("replay cache %s: %w", c.path, err)
	}
	for id, sp := range spans {
		c.entries[id].line = sp
	}
	if c.file != nil {
		_ = c.file.Close()
	}
	c.file, err = os.OpenFile(c.path, os.O_RDWR|os.O_APPEND, 0o600)
	if err != nil {
		c.file = nil
		return fmt.Errorf("replay cache %s: %w", c.path, err)
	}
	c.fileBytes = n
	return nil
}

// rewriteLine is e's line for a rewritten file: its current line read
// back from old when it holds a reply or journals who sent a request not
// yet answered (false when that no longer reads as e's), else the entry
// encoded anew.
func rewriteLine(old *os.File, e *replayEntry) ([]byte, bool) {
	if e.replyLen == 0 && e.whoLen == 0 {
		b, err := json.Marshal(e)
		return b, err == nil
	}
	line, _, ok := readBack(old, e)
	return line, ok
}
