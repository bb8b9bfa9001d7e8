package natsconn

import (
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/jsm.go/natscontext"
)

// Context is the part of a `nats` CLI context that connections use, as
// read by the nats CLI's own context package
// (github.com/nats-io/jsm.go/natscontext): paths have "~" and $VARs
// expanded, an nsc:// lookup is resolved, and keys that package does not
// know are ignored as the CLI ignores them.
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

// SelectedContext returns the context chosen with `nats context select`,
// as the nats CLI reads it ($XDG_CONFIG_HOME/nats/context.txt, or
// ~/.config/nats/context.txt); "" when none is selected.
func SelectedContext() (string, error) {
	return natscontext.SelectedContext(), nil
}

// ContextPath returns the file of the named context, where the nats CLI
// keeps it: $XDG_CONFIG_HOME/nats/context/<name>.json, or
// ~/.config/nats/context/<name>.json. A name the CLI would refuse (empty,
// a path, ..) is an error. Errors wrap ErrContext.
func ContextPath(name string) (string, error) {
	if name == "" || name == "." || strings.Contains(name, "..") || strings.ContainsAny(name, `/\`) {
		return "", fmt.Errorf("%w %q: invalid name", ErrContext, name)
	}
	path, err := natscontext.ContextPath(name)
	if err != nil {
		return "", fmt.Errorf("%w %q: %w", ErrContext, name, err)
	}
	return path, nil
}

// ReadContext reads the named context with the nats CLI's context package
// (see ContextPath). Errors wrap ErrContext and name the file.
func ReadContext(name string) (Context, error) {
	path, err := ContextPath(name)
	if err != nil {
		return Context{}, err
	}
	if _, err := os.Stat(path); err != nil {
		return Context{}, fmt.Errorf("%w %q: %w", ErrContext, name, err)
	}
	c, err := natscontext.New(name, true)
	if err != nil {
		return Context{}, fmt.Errorf("%w %q: %s: %w", ErrContext, name, path, err)
	}
	return Context{
		URL: c.ServerURL(), Creds: c.Creds(), NKey: c.NKey(),
		Cert: c.Certificate(), Key: c.Key(), CA: c.CA(),
		User: c.User(), Password: c.Password(), Token: c.Token(),
	}, nil
}
