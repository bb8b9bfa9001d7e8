package templates

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
)

var templateRe = regexp.MustCompile(`(?s)\{\{\s*(.*?)\s*\}\}`)

// programs caches compiled expressions; it is bounded and reset when full.
var programs = struct {
	sync.RWMutex
	m map[string]*vm.Program
}{m: map[string]*vm.Program{}}

const maxCachedPrograms = 4096

func compile(src string) (*vm.Program, error) {
	programs.RLock()
	p, ok := programs.m[src]
	programs.RUnlock()
	if ok {
		return p, nil
	}
	p, err := expr.Compile(src)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %s", ErrExpression, src, firstLine(err.Error()))
	}
	programs.Lock()
	if len(programs.m) >= maxCachedPrograms {
		programs.m = map[string]*vm.Program{}
	}
	programs.m[src] = p
	programs.Unlock()
	return p, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// Eval runs one expression and returns its value.
func (e *Env) Eval(src string) (any, error) {
	p, err := compile(src)
	if err != nil {
		return nil, err
	}
	v, err := expr.Run(p, e.vars)
	if err != nil {
		return nil, &exprError{src: src, cause: err}
	}
	return v, nil
}

// exprError reports a failed expression on one line while keeping the cause
// (ErrMissingKey, ErrDisabled …) available to errors.Is.
type exprError struct {
	src   string
	cause error
}

func (e *exprError) Error() string {
	return fmt.Sprintf("%s: %q: %s", ErrExpression, e.src, firstLine(e.cause.Error()))
}

func (e *exprError) Unwrap() []error { return []error{ErrExpression, e.cause} }

// EvalBool runs a condition, which may also be written as one {{ ... }}
// template; a result that is not true or false is an error.
func (e *Env) EvalBool(src string) (bool, error) {
	src = strings.TrimSpace(src)
	if m := templateRe.FindStringSubmatch(src); m != nil && m[0] == src {
		src = m[1]
	}
	v, err := e.Eval(src)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("%w: %q: must be true or false, got %v (%T)", ErrExpression, src, v, v)
	}
	return b, nil
}

// HasTemplate reports whether s contains a {{ ... }} template.
func HasTemplate(s string) bool { return strings.Contains(s, "{{") && templateRe.MatchString(s) }

// Expand resolves the {{ ... }} templates in s. When s is exactly one
// template whose value is a list or a map, that value is returned as is;
// otherwise the result is a string.
func (e *Env) Expand(s string) (any, error) {
	if !HasTemplate(s) {
		return s, nil
	}
	matches := templateRe.FindAllStringSubmatchIndex(s, -1)
	if len(matches) == 1 && matches[0][0] == 0 && matches[0][1] == len(s) {
		v, err := e.Eval(s[matches[0][2]:matches[0][3]])
		if err != nil {
			return nil, err
		}
		switch v.(type) {
		case []any, map[string]any:
			return v, nil
		}
		return stringify(v), nil
	}
	var b strings.Builder
	last := 0
	for _, m := range matches {
		v, err := e.Eval(s[m[2]:m[3]])
		if err != nil {
			return nil, err
		}
		b.WriteString(s[last:m[0]])
		b.WriteString(stringify(v))
		last = m[1]
	}
	b.WriteString(s[last:])
	return b.String(), nil
}

// ExpandString resolves templates in s and always returns a string.
func (e *Env) ExpandString(s string) (string, error) {
	v, err := e.Expand(s)
	if err != nil {
		return "", err
	}
	if str, ok := v.(string); ok {
		return str, nil
	}
	return stringify(v), nil
}

// ExpandValue resolves templates in every string inside v (maps, lists and
// scalars), returning a new value; v is not modified. Map keys named in skip
// are copied without expansion at the top level.
func (e *Env) ExpandValue(v any, skip ...string) (any, error) {
	return e.expandValue(v, "", skip)
}

func (e *Env) expandValue(v any, path string, skip []string) (any, error) {
	switch t := v.(type) {
	case string:
		out, err := e.Expand(t)
		if err != nil {
			if path != "" {
				return nil, fmt.Errorf("property %s: %w", path, err)
			}
			return nil, err
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, val := range t {
			child := k
			if path != "" {
				child = path + "." + k
			}
			if path == "" && contains(skip, k) {
				out[k] = val
				continue
			}
			ev, err := e.expandValue(val, child, nil)
			if err != nil {
				return nil, err
			}
			out[k] = ev
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, val := range t {
			ev, err := e.expandValue(val, fmt.Sprintf("%s[%d]", path, i), nil)
			if err != nil {
				return nil, err
			}
			out[i] = ev
		}
		return out, nil
	default:
		return v, nil
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func stringify(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		return t
	case float64:
		if t == float64(int64(t)) {
			return fmt.Sprintf("%d", int64(t))
		}
	}
	return fmt.Sprint(v)
}
