package auditlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// ErrUnavailable is returned when an audit line cannot be written; a
// request or bundle is then not run.
var ErrUnavailable = errors.New("audit log unavailable")

// File appends lines to an audit log made with mode 0600 in a directory
// made 0700 when missing. A failed write closes the file, so the next
// write opens it again. It is safe for concurrent use.
type File struct {
	path string
	// guards file
	mu   sync.Mutex
	file *os.File
}

// New returns a File for path that opens it at the first write.
func New(path string) *File { return &File{path: path} }

// Open opens (creates) path for appending now, restricting an existing
// regular file to 0600, so that a log that cannot be written is known at
// start.
func Open(path string) (*File, error) {
	f := New(path)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.openLocked(); err != nil {
		return nil, err
	}
	return f, nil
}

func (l *File) openLocked() error {
	if err := os.MkdirAll(filepath.Dir(l.path), 0o700); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, l.path, err)
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, l.path, err)
	}
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm() != 0o600 {
		if err := f.Chmod(0o600); err != nil {
			_ = f.Close()
			return fmt.Errorf("%w: %s: %w", ErrUnavailable, l.path, err)
		}
	}
	l.file = f
	return nil
}

// Write appends rec as one line (see Encode).
func (l *File) Write(rec *Record) error {
	b, err := Encode(rec)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file == nil {
		if err := l.openLocked(); err != nil {
			return err
		}
	}
	if _, err := l.file.Write(b); err != nil {
		_ = l.file.Close()
		l.file = nil
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, l.path, err)
	}
	return nil
}

// Close closes the file; a later Write opens it again.
func (l *File) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file == nil {
		return nil
	}
	err := l.file.Close()
	l.file = nil
	return err
}
