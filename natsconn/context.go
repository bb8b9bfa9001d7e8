package natsconn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Context is the part of a `nats` CLI context that connections use, read
// the way the nats CLI's own context package (github.com/nats-io/jsm.go,
// natscontext) reads a context file: JSON as encoding/json decodes it
// (keys matched without regard to case, a key given twice is its last
// value, keys CCM Fleet does not use ignored), "~" and $VARs expanded in
// the paths, the "nsc" lookup resolved with `nsc generate profile`, and
// the url defaulting to nats://127.0.0.1:4222. A test reads the same files
// with both. It is not that package because that one links the NATS
// server, which ccm-orch, a client, does not carry.
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

// contextFile is a context file's fields that Context is made from.
type contextFile struct {
	URL      string `json:"url"`
	Creds    string `json:"creds"`
	NKey     string `json:"nkey"`
	Cert     string `json:"cert"`
	Key      string `json:"key"`
	CA       string `json:"ca"`
	User     string `json:"user"`
	Password string `json:"password"`
	Token    string `json:"token"`
	// NSC is an nsc lookup (operator/account/user) that gives the creds
	// and the url when the file does not.
	NSC string `json:"nsc"`
}

// nscTimeout bounds one `nsc generate profile`.
const nscTimeout = 30 * time.Second

// configRoot is where the nats CLI keeps its configuration:
// $XDG_CONFIG_HOME, else ~/.config of the user's home (from the password
// database, not $HOME).
func configRoot() (string, error) {
	if xdg := os.Getenv("XDG_CONFIG_HOME"); xdg != "" {
		return xdg, nil
	}
	u, err := user.Current()
	if err != nil {
		return "", err
	}
	if u.HomeDir == "" {
		return "", errors.New("cannot determine home directory")
	}
	return filepath.Join(u.HomeDir, ".config"), nil
}

// SelectedContext returns the context chosen with `nats context select`,
// as the nats CLI reads it ($XDG_CONFIG_HOME/nats/context.txt, or
// ~/.config/nats/context.txt); "" when none is selected.
func SelectedContext() (string, error) {
	root, err := configRoot()
	if err != nil {
		return "", nil
	}
	data, err := os.ReadFile(filepath.Join(root, "nats", "context.txt"))
	if err != nil {
		return "", nil
	}
	return strings.TrimSpace(string(data)), nil
}

// ContextPath returns the file of the named context, where the nats CLI
// keeps it: $XDG_CONFIG_HOME/nats/context/<name>.json, or
// ~/.config/nats/context/<name>.json. A name the CLI would refuse (empty,
// a path, ..) is an error. Errors wrap ErrContext.
func ContextPath(name string) (string, error) {
	if name == "" || name == "." || strings.Contains(name, "..") || strings.ContainsAny(name, `/\`) {
		return "", fmt.Errorf("%w %q: invalid name", ErrContext, name)
	}
	root, err := configRoot()
	if err != nil {
		return "", fmt.Errorf("%w %q: %w", ErrContext, name, err)
	}
	return filepath.Join(root, "nats", "context", name+".json"), nil
}

// ReadContext reads the named context as the nats CLI does (see Context
// and ContextPath). Errors wrap ErrContext and name the file.
func ReadContext(name string) (Context, error) {
	path, err := ContextPath(name)
	if err != nil {
		return Context{}, err
	}
	if _, err := os.Stat(path); err != nil {
		return Context{}, fmt.Errorf("%w %q: %w", ErrContext, name, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Context{}, fmt.Errorf("%w %q: %s: %w", ErrContext, name, path, err)
	}
	var f contextFile
	if err := json.Unmarshal(data, &f); err != nil {
		// A value of the wrong type is named by its key, not by Go's
		// names for the fields.
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if te.Field == "" {
				err = fmt.Errorf("a JSON %s, not an object", te.Value)
			} else {
				err = fmt.Errorf("key %q: a JSON %s, not a %s", te.Field, te.Value, te.Type.Kind())
			}
		}
		return Context{}, fmt.Errorf("%w %q: %s: %w", ErrContext, name, path, err)
	}
	c := Context{URL: f.URL, Creds: f.Creds, NKey: f.NKey, Cert: f.Cert, Key: f.Key, CA: f.CA, User: f.User, Password: f.Password, Token: f.Token}
	for _, p := range []*string{&c.Creds, &c.NKey, &c.Cert, &c.Key, &c.CA} {
		*p = expandHome(*p)
	}
	var nscCreds, nscURL string
	if f.NSC != "" {
		if nscCreds, nscURL, err = nscProfile(f.NSC); err != nil {
			return Context{}, fmt.Errorf("%w %q: %s: %w", ErrContext, name, path, err)
		}
	}
	if c.URL == "" {
		c.URL = nscURL
	}
	if c.URL == "" {
		c.URL = nats.DefaultURL
	}
	if c.Creds == "" {
		c.Creds = nscCreds
	}
	return c, nil
}

// expandHome expands $VARs in path, then a leading "~" to the user's home
// directory (from the password database), as the nats CLI does.
func expandHome(path string) string {
	path = os.ExpandEnv(path)
	if path == "" || path[0] != '~' {
		return path
	}
	u, err := user.Current()
	if err != nil {
		return path
	}
	return strings.Replace(path, "~", u.HomeDir, 1)
}

// nscProfile asks `nsc generate profile` for the creds file and the
// service URLs of an nsc lookup (operator/account/user, with or without
// nsc://), as the nats CLI does for a context's "nsc" key.
func nscProfile(ref string) (creds, url string, err error) {
	path, err := exec.LookPath("nsc")
	if err != nil {
		return "", "", errors.New("cannot find 'nsc' in user path")
	}
	if len(ref) >= len("nsc://") && strings.EqualFold(ref[:len("nsc://")], "nsc://") {
		ref = ref[len("nsc://"):]
	}
	ctx, cancel := context.WithTimeout(context.Background(), nscTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "generate", "profile", "nsc://"+ref)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if hint := strings.TrimSpace(stderr.String()); hint != "" {
			return "", "", fmt.Errorf("nsc invoke failed: %w: %s", err, hint)
		}
		return "", "", fmt.Errorf("nsc invoke failed: %w", err)
	}
	var profile struct {
		UserCreds string `json:"user_creds"`
		Operator  struct {
			Service []string `json:"service"`
		} `json:"operator"`
	}
	if err := json.Unmarshal(out, &profile); err != nil {
		return "", "", fmt.Errorf("could not parse nsc output: %w", err)
	}
	return profile.UserCreds, strings.Join(profile.Operator.Service, ","), nil
}
