package templates

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/CloudyKit/jet/v6"
)

// KVReader reads one value from a key-value store, such as a NATS JetStream
// KV bucket; kvGet() in expressions calls it. KVGet returns the value of key
// in bucket, an error wrapping ErrMissingKey when the bucket has no such key
// (or it was deleted), and any other error when the store cannot answer
// before ctx ends.
type KVReader interface {
	KVGet(ctx context.Context, bucket, key string) ([]byte, error)
}

// DefaultKVTimeout bounds one kvGet() call when WithKV is given 0.
const DefaultKVTimeout = 5 * time.Second

// maxKVValue bounds what kvGet() returns.
const maxKVValue = 1 << 20

// WithKV exposes kvGet(bucket, key) over r, each call bounded by timeout
// (DefaultKVTimeout when 0).
func WithKV(r KVReader, timeout time.Duration) Option {
	if timeout <= 0 {
		timeout = DefaultKVTimeout
	}
	return func(e *Env) {
		e.kv = r
		e.kvTimeout = timeout
	}
}

func (e *Env) kvGetFunc(params ...any) (any, error) {
	if err := e.step(); err != nil {
		return nil, err
	}
	if len(params) != 2 {
		return nil, fmt.Errorf("kvGet takes a bucket and a key, got %d arguments", len(params))
	}
	bucket, ok1 := params[0].(string)
	key, ok2 := params[1].(string)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("kvGet: the bucket and the key must be strings, got %T and %T", params[0], params[1])
	}
	if e.kv == nil {
		return nil, fmt.Errorf("kvGet(%q, %q): a key-value store is %w", bucket, key, ErrDisabled)
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.kvTimeout)
	defer cancel()
	v, err := e.kv.KVGet(ctx, bucket, key)
	if err != nil {
		return nil, fmt.Errorf("kvGet(%q, %q): %w", bucket, key, err)
	}
	if len(v) > maxKVValue {
		return nil, fmt.Errorf("kvGet(%q, %q): the value is larger than %d bytes", bucket, key, maxKVValue)
	}
	return string(v), nil
}

// templateFunc is template(s): s ending in .templ names a file (read as
// file() does) holding {{ }} / ${ } templates, s ending in .jet is handed to
// jet(), anything else is expanded as a template itself. A single
// whole-string template keeps its type.
func (e *Env) templateFunc(params ...any) (any, error) {
	if len(params) != 1 {
		return nil, fmt.Errorf("template takes one argument, got %d", len(params))
	}
	s, ok := params[0].(string)
	if !ok {
		return nil, fmt.Errorf("template: the argument must be a string, got %T", params[0])
	}
	e = e.sandboxed()
	if err := e.budget.Step(1); err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	leave, err := e.budget.Enter()
	if err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	defer leave()
	switch filepath.Ext(s) {
	case ".templ":
		body, err := e.fileFunc(s)
		if err != nil {
			return nil, fmt.Errorf("template: %w", err)
		}
		s = body.(string)
	case ".jet":
		return e.jetFunc(s)
	}
	v, err := e.Expand(s)
	if err != nil {
		return nil, e.budget.flatten(err)
	}
	return v, nil
}

// jetFunc is jet(body) or jet(body, left, right): body rendered as a Jet
// template with [[ ]] (or the given) delimiters; a body ending in .jet
// names a file, read as file() does. Jet sees facts/Facts, data/Data,
// environ/Environ (when exposed) and the functions lookup, file, readFile,
// template and kvGet, and the caller's functions (WithFunction).
func (e *Env) jetFunc(params ...any) (any, error) {
	left, right := "[[", "]]"
	var body string
	switch len(params) {
	case 1, 3:
		s, ok := params[0].(string)
		if !ok {
			return nil, fmt.Errorf("jet: the template must be a string, got %T", params[0])
		}
		body = s
		if len(params) == 3 {
			l, ok1 := params[1].(string)
			r, ok2 := params[2].(string)
			if !ok1 || !ok2 || l == "" || r == "" {
				return nil, fmt.Errorf("jet: the delimiters must be non-empty strings")
			}
			left, right = l, r
		}
	default:
		return nil, fmt.Errorf("jet takes a template and optionally two delimiters, got %d arguments", len(params))
	}
	e = e.sandboxed()
	if err := e.budget.Step(1); err != nil {
		return nil, fmt.Errorf("jet: %w", err)
	}
	leave, err := e.budget.Enter()
	if err != nil {
		return nil, fmt.Errorf("jet: %w", err)
	}
	defer leave()
	if strings.HasSuffix(body, ".jet") {
		b, err := e.fileFunc(body)
		if err != nil {
			return nil, fmt.Errorf("jet: %w", err)
		}
		body = b.(string)
	}
	v, err := e.RenderJet(body, left, right)
	if err != nil {
		return nil, e.budget.flatten(err)
	}
	return v, nil
}

// RenderJet renders body as a Jet template with the given delimiters over
// the variables and functions jet() offers. As in Jet generally, reading a
// map key that does not exist gives nothing (an empty string), while going
// further below it is an error; use lookup() for a checked read.
func (e *Env) RenderJet(body, left, right string) (string, error) {
	var buf bytes.Buffer
	if err := e.RenderJetTo(&buf, "template", body, left, right); err != nil {
		return "", fmt.Errorf("%w: jet: %w", ErrExpression, err)
	}
	return buf.String(), nil
}

// RenderJetTo is RenderJet writing to w, with the template called name in
// Jet's errors, which it returns as Jet gives them (a name Jet does not
// know, such as a misspelt variable, is one). It renders in the template
// sandbox (SandboxJet) with e's budget, or a new one: a render that passes
// a limit fails with an error wrapping ErrLimit, a template using what the
// sandbox refuses (include, exec, recursive blocks) with ErrSandbox. A
// write error of w ends the render.
func (e *Env) RenderJetTo(w io.Writer, name, body, left, right string) error {
	e = e.sandboxed()
	vars := jet.VarMap{}
	for _, v := range []string{"facts", "Facts", "data", "Data", "environ", "Environ"} {
		if val, ok := e.vars[v]; ok {
			vars.Set(v, val)
		}
	}
	return SandboxJet(w, e.budget, JetRender{Name: name, Body: body, Left: left, Right: right, Funcs: e.jetFuncs(), Vars: vars})
}

// jetFuncs wraps the expression functions for Jet.
func (e *Env) jetFuncs() map[string]jet.Func {
	funcs := e.JetCallerFuncs()
	for name, f := range map[string]jet.Func{
		"lookup":   wrapJet("lookup", 1, 2, e.lookupFunc),
		"file":     wrapJet("file", 1, 1, e.fileFunc),
		"readFile": wrapJet("readFile", 1, 1, e.fileFunc),
		"template": wrapJet("template", 1, 1, e.templateFunc),
		"kvGet":    wrapJet("kvGet", 2, 2, e.kvGetFunc),
	} {
		funcs[name] = f
	}
	return funcs
}

// wrapJet makes f a Jet function taking min to max arguments (max -1: any
// number); an error f returns stops the render.
func wrapJet(name string, min, max int, f func(...any) (any, error)) jet.Func {
	return func(a jet.Arguments) reflect.Value {
		a.RequireNumOfArguments(name, min, max)
		args := make([]any, a.NumOfArguments())
		for i := range args {
			args[i] = a.Get(i).Interface()
		}
		v, err := f(args...)
		if err != nil {
			a.Panicf("%v", err)
		}
		return reflect.ValueOf(v)
	}
}
