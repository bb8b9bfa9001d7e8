package templates

// Function is a function expressions can call, e.g. registrations().
type Function func(params ...any) (any, error)

// WithFunction exposes fn to expressions as name. It cannot replace what
// New defines (facts, data, lookup, file, environ).
func WithFunction(name string, fn Function) Option {
	return func(e *Env) {
		if e.funcs == nil {
			e.funcs = map[string]Function{}
		}
		e.funcs[name] = fn
	}
}
