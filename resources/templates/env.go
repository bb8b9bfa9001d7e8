package templates

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ErrMissingKey is returned by lookups of a key that does not exist when no
// default was given.
var ErrMissingKey = errors.New("missing key")

// ErrDisabled is returned when an expression uses a root or function the
// caller did not expose (environ., file()).
var ErrDisabled = errors.New("not available here")

// ErrExpression is wrapped by every failure to compile or run an expression.
var ErrExpression = errors.New("expression failed")

// maxFileBytes bounds what file() reads.
const maxFileBytes = 1 << 20

// Env is what expressions can see. It is safe for concurrent use once built.
type Env struct {
	facts    map[string]any
	data     map[string]any
	environ  map[string]any // nil unless exposed
	fileRoot string         // "" unless exposed
	vars     map[string]any // the expr environment
	kv       KVReader       // nil unless exposed
	// kvTimeout bounds one kvGet() call.
	kvTimeout time.Duration
	// missingEmpty makes a missing key give "" instead of an error (the
	// hierarchy's rule, see WithMissingEmpty).
	missingEmpty bool
	// sensitive are the data keys marked sensitive (WithSensitive).
	sensitive []string
	// funcs are the caller's functions (WithFunction) that New took.
	funcs map[string]Function
	// budget is the sandbox budget of the render this Env belongs to (see
	// sandboxed); nil in an Env as New makes it.
	budget *Budget
}

// step charges one step to e's budget, when it has one.
func (e *Env) step() error {
	if e.budget == nil {
		return nil
	}
	return e.budget.Step(1)
}

// sandboxed returns e with a budget: e itself when it has one, otherwise a
// copy with a new budget whose template() and jet() share it.
func (e *Env) sandboxed() *Env {
	if e.budget != nil {
		return e
	}
	c := *e
	c.budget = NewBudget()
	c.vars = make(map[string]any, len(e.vars))
	for k, v := range e.vars {
		c.vars[k] = v
	}
	c.vars["template"] = c.templateFunc
	c.vars["jet"] = c.jetFunc
	c.vars["file"] = c.fileFunc
	c.vars["readFile"] = c.fileFunc
	c.vars["kvGet"] = c.kvGetFunc
	c.vars[exprValueFunc] = c.valueFunc
	return &c
}

// Option exposes more to expressions than facts and data.
type Option func(*Env)

// WithEnviron exposes the given KEY=VALUE environment under environ.
func WithEnviron(environ []string) Option {
	return func(e *Env) {
		e.environ = make(map[string]any, len(environ))
		for _, kv := range environ {
			k, v, ok := strings.Cut(kv, "=")
			if ok && k != "" {
				e.environ[k] = v
			}
		}
	}
}

// WithFiles exposes file('relative/path'), reading files below root only.
func WithFiles(root string) Option {
	return func(e *Env) { e.fileRoot = root }
}

// New builds an Env over facts and data; nil maps are treated as empty.
func New(facts, data map[string]any, opts ...Option) *Env {
	if facts == nil {
		facts = map[string]any{}
	}
	if data == nil {
		data = map[string]any{}
	}
	e := &Env{facts: facts, data: data}
	for _, o := range opts {
		o(e)
	}
	e.vars = map[string]any{
		"facts":    e.facts,
		"data":     e.data,
		"Facts":    ccmView(e.facts),
		"Data":     e.data,
		"lookup":   e.lookupFunc,
		"file":     e.fileFunc,
		"readFile": e.fileFunc,
		"template": e.templateFunc,
		"jet":      e.jetFunc,
		"kvGet":    e.kvGetFunc,
	}
	if e.environ != nil {
		e.vars["environ"] = e.environ
		e.vars["Environ"] = e.environ
	}
	for name, fn := range e.funcs {
		if _, taken := e.vars[name]; !taken && name != "environ" && name != "Environ" {
			e.vars[name] = (func(...any) (any, error))(fn)
		} else {
			// funcs keeps the functions New took, for Jet and Go templates
			delete(e.funcs, name)
		}
	}
	return e
}

// WithMissingEmpty makes lookup() of a missing fact (a key below facts.)
// without a default give "" instead of ErrMissingKey, and lets an
// expression give nothing (nil): the
// rule for hierarchy order entries, where a fact a host lacks makes the entry
// not match.
func WithMissingEmpty() Option {
	return func(e *Env) { e.missingEmpty = true }
}

// Facts returns the facts expressions see.
func (e *Env) Facts() map[string]any { return e.facts }

// FactsView returns the facts as the Facts variable shows them: below the
// gathered trees also under gopsutil's Go field names (see GoName).
func (e *Env) FactsView() map[string]any { return e.vars["Facts"].(map[string]any) }

// Data returns the data expressions see.
func (e *Env) Data() map[string]any { return e.data }

// Lookup returns the value at a dotted key such as "facts.host.info.os"
// ("facts.list.0" indexes lists; "env.X" is "environ.X"). A missing key is
// ErrMissingKey.
func (e *Env) Lookup(key string) (any, error) {
	root, rest, _ := strings.Cut(key, ".")
	var cur any
	switch root {
	case "facts":
		cur = e.facts
	case "data":
		cur = e.data
	case "environ", "env":
		// env. is the spelling of CCM's CLI documentation; it is environ.
		// under another name and follows the same rules.
		if e.environ == nil {
			return nil, fmt.Errorf("lookup %q: %s is %w", key, root, ErrDisabled)
		}
		cur = e.environ
	default:
		return nil, fmt.Errorf("lookup %q: %w: keys start with facts, data or environ (or env)", key, ErrMissingKey)
	}
	if rest == "" {
		return cur, nil
	}
	v, ok := Walk(cur, rest)
	if !ok {
		return nil, fmt.Errorf("lookup %q: %w", key, ErrMissingKey)
	}
	return v, nil
}

// Walk follows a dotted path through nested maps and lists; a "#" segment
// after a list is its length.
func Walk(cur any, path string) (any, bool) {
	for part := range strings.SplitSeq(path, ".") {
		if part == "#" {
			// "list.#" is the length of a list, as in GJSON paths.
			switch c := cur.(type) {
			case []any:
				cur = len(c)
				continue
			case []string:
				cur = len(c)
				continue
			}
			return nil, false
		}
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[part]
			if !ok {
				return nil, false
			}
			cur = v
		case map[string]string:
			v, ok := c[part]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		case []string:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

func (e *Env) lookupFunc(params ...any) (any, error) {
	if len(params) < 1 || len(params) > 2 {
		return nil, fmt.Errorf("lookup takes a key and an optional default, got %d arguments", len(params))
	}
	key, ok := params[0].(string)
	if !ok {
		return nil, fmt.Errorf("lookup: the key must be a string, got %T", params[0])
	}
	v, err := e.Lookup(key)
	if errors.Is(err, ErrMissingKey) && len(params) == 2 {
		return params[1], nil
	}
	if errors.Is(err, ErrMissingKey) && e.missingEmpty && strings.HasPrefix(key, "facts.") {
		return "", nil
	}
	return v, err
}

func (e *Env) fileFunc(params ...any) (any, error) {
	if err := e.step(); err != nil {
		return nil, err
	}
	if e.fileRoot == "" {
		return nil, fmt.Errorf("file(): reading files is %w", ErrDisabled)
	}
	if len(params) != 1 {
		return nil, fmt.Errorf("file takes one path, got %d arguments", len(params))
	}
	name, ok := params[0].(string)
	if !ok {
		return nil, fmt.Errorf("file: the path must be a string, got %T", params[0])
	}
	if filepath.IsAbs(name) || !filepath.IsLocal(name) {
		return nil, fmt.Errorf("file %q: only paths inside the working directory can be read", name)
	}
	f, err := os.Open(filepath.Join(e.fileRoot, name))
	if err != nil {
		return nil, fmt.Errorf("file %q: %w", name, err)
	}
	defer f.Close()
	buf := make([]byte, maxFileBytes+1)
	n, err := f.Read(buf)
	if err != nil && n == 0 {
		return "", nil
	}
	if n > maxFileBytes {
		return nil, fmt.Errorf("file %q: larger than %d bytes", name, maxFileBytes)
	}
	return string(buf[:n]), nil
}
