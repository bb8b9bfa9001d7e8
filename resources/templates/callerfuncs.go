package templates

import (
	"errors"
	"fmt"
	"reflect"
	gotemplate "text/template"

	"github.com/CloudyKit/jet/v6"
)

// Function is a function expressions can call, e.g. registrations().
type Function func(params ...any) (any, error)

// WithFunction exposes fn to expressions as name, and to Jet and Go
// templates (JetCallerFuncs, GoCallerFuncs). It cannot replace what New
// defines (facts, data, lookup, file, environ).
func WithFunction(name string, fn Function) Option {
	return func(e *Env) {
		if e.funcs == nil {
			e.funcs = map[string]Function{}
		}
		e.funcs[name] = fn
	}
}

// JetCallerFuncs are the caller's functions (WithFunction) as Jet
// functions, called as expressions call them: registrations("production",
// "http", "web", "*").
func (e *Env) JetCallerFuncs() map[string]jet.Func {
	out := map[string]jet.Func{}
	for name, fn := range e.funcs {
		out[name] = wrapJet(name, 0, -1, fn)
	}
	return out
}

// GoCallerFuncs are the caller's functions (WithFunction) as Go
// text/template functions: {{ range $e := registrations "production"
// "http" "web" "*" }}.
func (e *Env) GoCallerFuncs() gotemplate.FuncMap {
	out := gotemplate.FuncMap{}
	for name, fn := range e.funcs {
		out[name] = (func(...any) (any, error))(fn)
	}
	return out
}

// FunctionOptions are the options that give another Env the caller's
// functions of e (an Env made over other data, as a scaffold's own data).
func (e *Env) FunctionOptions() []Option {
	var out []Option
	for name, fn := range e.funcs {
		out = append(out, WithFunction(name, fn))
	}
	return out
}

// JetLookup is lookup(key) or lookup(key, default) for Jet templates
// outside jet() (scaffolds, resources_jet_file): a missing key without a
// default stops the render, a nil value renders as "".
func (e *Env) JetLookup() jet.Func {
	return func(args jet.Arguments) reflect.Value {
		args.RequireNumOfArguments("lookup", 1, 2)
		v, err := e.Lookup(fmt.Sprint(args.Get(0).Interface()))
		if errors.Is(err, ErrMissingKey) && args.NumOfArguments() == 2 {
			return args.Get(1)
		}
		if err != nil {
			args.Panicf("lookup: %v", err)
		}
		if v == nil {
			return reflect.ValueOf("")
		}
		return reflect.ValueOf(v)
	}
}
