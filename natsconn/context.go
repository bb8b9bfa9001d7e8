package natsconn

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ccm-fleet/ccm/protocol"
)

// maxContextSize bounds how much of a context file is read.
const maxContextSize = 1 << 20

// maxSelectedSize bounds how much of the selected-context file is read.
const maxSelectedSize = 4096

// Context is the part of a `nats` CLI context file that connections use.
// File paths have a leading "~/" expanded to the home directory. Other keys
// of the file are ignored (the nats CLI adds keys we do not know); names
// match exactly, and duplicate keys and invalid UTF-8 are refused.
type Context struct {
	URL      string `json:"url"`
	Creds    string `json:"creds"`
	NKey     string `json:"nkey"`
	Cert     string `json:"cert"`
	Key      string `json:"key"`
	CA       string `json:"ca"`
	User     string `json:"user"`
	Password string `json:"password"`
	Token    string `json:"token"`
}

// SelectedContext returns the context chosen with `nats context select`:
// the name in $XDG_CONFIG_HOME/nats/context.txt, or
// ~/.config/nats/context.txt when XDG_CONFIG_HOME is unset, the file the
// nats CLI (github.com/nats-io/jsm.go/natscontext) keeps it in. No file, or
// an empty one, is no selection: "" and no error. Errors wrap ErrContext.
func SelectedContext() (string, error) {
	base, err := configHome()
	if err != nil {
		return "", fmt.Errorf("%w: selected context: %w", ErrContext, err)
	}
	path := filepath.Join(base, "nats", "context.txt")
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("%w: selected context: %w", ErrContext, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSelectedSize+1))
	if err != nil {
		return "", fmt.Errorf("%w: selected context: %s: %w", ErrContext, path, err)
	}
	if len(data) > maxSelectedSize {
		return "", fmt.Errorf("%w: selected context: %s: larger than %d bytes", ErrContext, path, maxSelectedSize)
	}
	return strings.TrimSpace(string(data)), nil
}

// configHome is $XDG_CONFIG_HOME, or ~/.config when it is unset.
func configHome() (string, error) {
	if base := os.Getenv("XDG_CONFIG_HOME"); base != "" {
		return base, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".config"), nil
}

// ContextPath returns the file of the named context:
// $XDG_CONFIG_HOME/nats/context/<name>.json, or
// ~/.config/nats/context/<name>.json when XDG_CONFIG_HOME is unset. Errors
// wrap ErrContext.
func ContextPath(name string) (string, error) {
	if name == "" || name == "." || strings.Contains(name, "..") || strings.ContainsAny(name, `/\`) {
		return "", fmt.Errorf("%w %q: invalid name", ErrContext, name)
	}
	base, err := configHome()
	if err != nil {
		return "", fmt.Errorf("%w %q: %w", ErrContext, name, err)
	}
	return filepath.Join(base, "nats", "context", name+".json"), nil
}

// ReadContext reads the named context (see ContextPath). Errors wrap
// ErrContext and name the file.
func ReadContext(name string) (Context, error) {
	path, err := ContextPath(name)
	if err != nil {
		return Context{}, err
	}
	f, err := os.Open(path)
	if err != nil {
		return Context{}, fmt.Errorf("%w %q: %w", ErrContext, name, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxContextSize+1))
	if err != nil {
		return Context{}, fmt.Errorf("%w %q: %s: %w", ErrContext, name, path, err)
	}
	if len(data) > maxContextSize {
		return Context{}, fmt.Errorf("%w %q: %s: larger than %d bytes", ErrContext, name, path, maxContextSize)
	}
	// The nats CLI owns this file and adds keys over time: unknown keys are
	// ignored (DecodeJSONTolerant), but names match exactly and duplicate
	// keys, invalid UTF-8 and the size and depth limits are refused, as
	// everywhere else.
	var c Context
	if err := protocol.DecodeJSONTolerant(data, &c, protocol.Limits{MaxBytes: maxContextSize}); err != nil {
		var pe *protocol.Error
		if errors.As(err, &pe) {
			return Context{}, fmt.Errorf("%w %q: %s: %s", ErrContext, name, path, pe.KeyMessage())
		}
		return Context{}, fmt.Errorf("%w %q: %s: %w", ErrContext, name, path, err)
	}
	for _, p := range []*string{&c.Creds, &c.NKey, &c.Cert, &c.Key, &c.CA} {
		if *p, err = expandHome(*p); err != nil {
			return Context{}, fmt.Errorf("%w %q: %s: %w", ErrContext, name, path, err)
		}
	}
	return c, nil
}

// expandHome replaces a leading "~/" with the home directory.
func expandHome(p string) (string, error) {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", errors.New("cannot expand ~: " + err.Error())
	}
	return filepath.Join(home, strings.TrimPrefix(p, "~")), nil
}
