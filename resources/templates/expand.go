package templates

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
)

// templateSpace is what the template delimiters may be padded with (the
// \s of regular expressions).
const templateSpace = "\t\n\f\r "

// template is one {{ expression }} or ${ expression } in a string:
// s[start:end] is the whole template and s[exprStart:exprEnd] the
// expression, without the padding.
type template struct{ start, end, exprStart, exprEnd int }

// nextTemplate finds the first template in s at or after from. Two
// spellings are accepted, as CCM does: "{{ expr }}", closed by the first
// "}}" outside a quoted string, and "${ expr }", closed by the "}" that
// balances its "{" (so maps and closures inside work), also outside quoted
// strings. "${{" is a literal "$" followed by a {{ }} template. Quotes are
// '...', "..." (both with backslash escapes) and `...`. An opener that is
// never closed is text, and scanning goes on after it.
func nextTemplate(s string, from int) (template, bool) {
	n := len(s)
	for i := from; i < n-1; i++ {
		var dollar bool
		switch {
		case s[i] == '{' && s[i+1] == '{':
		case s[i] == '$' && s[i+1] == '{':
			if i+2 < n && s[i+2] == '{' {
				continue // "${{": the "{{" is picked up next
			}
			dollar = true
		default:
			continue
		}
		if end, ok := closeTemplate(s, i+2, dollar); ok {
			t := template{start: i, end: end, exprStart: i + 2, exprEnd: end - 2}
			if dollar {
				t.exprEnd = end - 1
			}
			for t.exprStart < t.exprEnd && strings.IndexByte(templateSpace, s[t.exprStart]) >= 0 {
				t.exprStart++
			}
			for t.exprEnd > t.exprStart && strings.IndexByte(templateSpace, s[t.exprEnd-1]) >= 0 {
				t.exprEnd--
			}
			return t, true
		}
	}
	return template{}, false
}

// closeTemplate scans s from i, just after an opener, and returns the index
// just past the closer.
func closeTemplate(s string, i int, dollar bool) (int, bool) {
	var quote byte // the open quote, 0 outside one
	depth := 1
	for ; i < len(s); i++ {
		c := s[i]
		if quote != 0 {
			switch {
			case c == '\\' && quote != '`':
				i++ // the escaped byte
			case c == quote:
				quote = 0
			}
			continue
		}
		switch {
		case c == '"' || c == '\'' || c == '`':
			quote = c
		case !dollar && c == '}' && i+1 < len(s) && s[i+1] == '}':
			return i + 2, true
		case dollar && c == '{':
			depth++
		case dollar && c == '}':
			depth--
			if depth == 0 {
				return i + 1, true
			}
		}
	}
	return 0, false
}

// findTemplates returns every template in s, in order.
func findTemplates(s string) []template {
	var out []template
	for from := 0; from < len(s); {
		t, ok := nextTemplate(s, from)
		if !ok {
			break
		}
		out = append(out, t)
		from = t.end
	}
	return out
}

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
	if err := checkNesting(src); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrExpression, err)
	}
	if strings.Contains(src, jetReserved) {
		return nil, fmt.Errorf("%w: %q: %w", ErrExpression, src, refused("the names %s… are reserved:", jetReserved))
	}
	p, err := expr.Compile(src, expr.Patch(exprCharges{}))
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %s", ErrExpression, src, exprMessage(err))
	}
	programs.Lock()
	if len(programs.m) >= maxCachedPrograms {
		programs.m = map[string]*vm.Program{}
	}
	programs.m[src] = p
	programs.Unlock()
	return p, nil
}

// exprMessage renders an expression's error on one line: expr's own
// errors by their message and position (without the source snippet the
// caller quotes already), any other error as it renders itself.
func exprMessage(err error) string {
	var fe *file.Error
	if !errors.As(err, &fe) {
		return err.Error()
	}
	if fe.Snippet == "" {
		return fe.Message
	}
	return fmt.Sprintf("%s (%d:%d)", fe.Message, fe.Line, fe.Column+1) // Column counts from 0
}

// Eval runs one expression and returns its value, in the template sandbox:
// with e's budget, or a new one.
func (e *Env) Eval(src string) (any, error) {
	e = e.sandboxed()
	p, err := compile(src)
	if err != nil {
		return nil, err
	}
	if e.environ == nil && readsEnviron(src) {
		return nil, &exprError{src: src, cause: fmt.Errorf("the environment (Environ) is %w", ErrDisabled)}
	}
	v, err := expr.Run(p, e.vars)
	if err != nil {
		return nil, &exprError{src: src, cause: e.budget.flatten(err)}
	}
	return v, nil
}

// readsEnviron reports whether an expression names environ or Environ as a
// variable.
func readsEnviron(src string) bool {
	if !strings.Contains(src, "nviron") {
		return false
	}
	for _, w := range wordsOf(src) {
		if (w.text == "environ" || w.text == "Environ") && (w.end-len(w.text) == 0 || src[w.end-len(w.text)-1] != '.') {
			return true
		}
	}
	return false
}

// evalTemplate runs the expression of one template. An expression that gives
// nothing (nil: a key that does not exist, read as Facts.x.y) is an error
// wrapping ErrMissingKey rather than an empty string, unless the Env was
// built WithMissingEmpty.
func (e *Env) evalTemplate(src string) (any, error) {
	v, err := e.Eval(src)
	if err != nil {
		return nil, err
	}
	if v == nil && !e.missingEmpty {
		return nil, &exprError{src: src, cause: fmt.Errorf("%w: the expression gave no value (use lookup(key, default) for an optional value)", ErrMissingKey)}
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
	return fmt.Sprintf("%s: %q: %s", ErrExpression, e.src, exprMessage(e.cause))
}

func (e *exprError) Unwrap() []error { return []error{ErrExpression, e.cause} }

// EvalBool runs a condition, which may also be written as one {{ ... }}
// template; a result that is not true or false is an error.
func (e *Env) EvalBool(src string) (bool, error) {
	src = strings.TrimSpace(src)
	if t, ok := nextTemplate(src, 0); ok && t.start == 0 && t.end == len(src) {
		src = src[t.exprStart:t.exprEnd]
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

// HasTemplate reports whether s contains a {{ ... }} or ${ ... } template.
func HasTemplate(s string) bool {
	_, ok := nextTemplate(s, 0)
	return ok
}

// Expand resolves the {{ ... }} and ${ ... } templates in s. When s is exactly one
// template whose value is a list or a map, that value is returned as is;
// otherwise the result is a string.
func (e *Env) Expand(s string) (any, error) {
	if !HasTemplate(s) {
		return s, nil
	}
	matches := findTemplates(s)
	if len(matches) == 1 && matches[0].start == 0 && matches[0].end == len(s) {
		v, err := e.evalTemplate(s[matches[0].exprStart:matches[0].exprEnd])
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
		v, err := e.evalTemplate(s[m.exprStart:m.exprEnd])
		if err != nil {
			return nil, err
		}
		b.WriteString(s[last:m.start])
		b.WriteString(stringify(v))
		last = m.end
	}
	b.WriteString(s[last:])
	return b.String(), nil
}

// Replace returns s with every template (either spelling) replaced by repl,
// without evaluating anything.
func Replace(s, repl string) string {
	var b strings.Builder
	last := 0
	for _, t := range findTemplates(s) {
		b.WriteString(s[last:t.start])
		b.WriteString(repl)
		last = t.end
	}
	b.WriteString(s[last:])
	return b.String()
}

// Whole reports whether s, spaces around it aside, is exactly one template
// (whose value then keeps its type when expanded).
func Whole(s string) bool {
	ts := findTemplates(s)
	return len(ts) == 1 && strings.TrimSpace(s) == s[ts[0].start:ts[0].end]
}

// ExpandMatch resolves the templates in s to a string, as a hierarchy order
// entry is: matched is true when at least one template gave a value other
// than nil or "", or when s has no template and is not empty. An entry such
// as "env:${ lookup('facts.env') }" on a host without an env fact does not
// match (with WithMissingEmpty), so it selects no override.
func (e *Env) ExpandMatch(s string) (out string, matched bool, err error) {
	matches := findTemplates(s)
	if len(matches) == 0 {
		return s, s != "", nil
	}
	var b strings.Builder
	last := 0
	for _, m := range matches {
		v, err := e.Eval(s[m.exprStart:m.exprEnd])
		if err != nil {
			return "", false, err
		}
		if v != nil && v != "" {
			matched = true
		}
		b.WriteString(s[last:m.start])
		b.WriteString(stringify(v))
		last = m.end
	}
	b.WriteString(s[last:])
	return b.String(), matched, nil
}

// ExpandTyped is Expand that keeps the type of every value a string that is
// one template (spaces around it allowed) gives, numbers and booleans
// included, as CCM does for data values; other strings give strings.
func (e *Env) ExpandTyped(s string) (any, error) {
	matches := findTemplates(s)
	if len(matches) == 1 && strings.TrimSpace(s) == s[matches[0].start:matches[0].end] {
		return e.evalTemplate(s[matches[0].exprStart:matches[0].exprEnd])
	}
	return e.Expand(s)
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

// Check compiles every {{ ... }} template in s without evaluating it: it
// finds syntax errors (an unbalanced parenthesis, an unknown operator) but
// not what depends on facts or data, such as a missing key. The error wraps
// ErrExpression and quotes the expression.
func Check(s string) error {
	for _, t := range findTemplates(s) {
		if _, err := compile(s[t.exprStart:t.exprEnd]); err != nil {
			return err
		}
	}
	return nil
}

// CheckCondition compiles a control.if or control.unless condition (which
// may be written as one {{ ... }} template) without evaluating it, like Check.
func CheckCondition(src string) error {
	src = strings.TrimSpace(src)
	if t, ok := nextTemplate(src, 0); ok && t.start == 0 && t.end == len(src) {
		src = src[t.exprStart:t.exprEnd]
	}
	_, err := compile(src)
	return err
}

// ExpandKeys resolves templates in every map key inside v, at any depth,
// and leaves every other string as it is (ExpandValue expands those): for
// properties keyed by what they check, such as goss rules keyed by a path
// or a URL. v is not modified. Two keys that expand to the same key are an
// error.
func (e *Env) ExpandKeys(v any) (any, error) {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, val := range t {
			nk, err := e.ExpandString(k)
			if err != nil {
				return nil, fmt.Errorf("key %q: %w", k, err)
			}
			if _, dup := out[nk]; dup {
				return nil, fmt.Errorf("key %q: %q is there twice", k, nk)
			}
			ev, err := e.ExpandKeys(val)
			if err != nil {
				return nil, err
			}
			out[nk] = ev
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, val := range t {
			ev, err := e.ExpandKeys(val)
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
