package templates

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"time"

	"github.com/expr-lang/expr/ast"
)

// The template sandbox: every engine (expressions, jet(), template(),
// resources_jet_file, scaffolds' Go and Jet templates) renders with one
// function set and one Budget per render, shared by the renders nested in
// it (template() and jet() calls, a scaffold's render()).
const (
	// MaxRenderDepth bounds nested renders: template() and jet() calls
	// inside each other, a scaffold's render() of a partial.
	MaxRenderDepth = 10
	// MaxRenderOutput bounds the bytes one render writes, nested renders
	// included.
	MaxRenderOutput = 8 << 20
	// MaxRenderValues bounds the bytes of the values functions and
	// operators build during one render (strings, lists): what a render
	// may hold in memory besides its output.
	MaxRenderValues = 64 << 20
	// MaxRenderSteps bounds the loop iterations, function calls and
	// block calls of one render.
	MaxRenderSteps = 1_000_000
	// MaxRenderTime bounds the time of one render, checked at every step.
	MaxRenderTime = 10 * time.Second
	// MaxTemplateNesting bounds how deeply brackets nest in a template's
	// source ((, [ and {): the parsers recurse once per level.
	MaxTemplateNesting = 200
)

// ErrLimit is wrapped by every error of a render that passed one of the
// sandbox's limits.
var ErrLimit = errors.New("template sandbox limit exceeded")

// ErrSandbox is wrapped by every error of a template that uses what the
// sandbox does not offer: include, import, exec, try, recursive blocks,
// the environment, DNS.
var ErrSandbox = errors.New("not allowed in the template sandbox")

// LimitError names the limit a render passed.
type LimitError struct {
	// Limit is "depth", "output", "values", "steps", "time" or "nesting".
	Limit string
	// Max is the limit's value (bytes, levels, steps; nanoseconds for time).
	Max int64
}

func (e *LimitError) Error() string {
	switch e.Limit {
	case "depth":
		return fmt.Sprintf("%s: templates nested more than %d deep (depth limit)", ErrLimit, e.Max)
	case "output":
		return fmt.Sprintf("%s: the render wrote more than %d bytes (output limit)", ErrLimit, e.Max)
	case "values":
		return fmt.Sprintf("%s: the render built values of more than %d bytes (values limit)", ErrLimit, e.Max)
	case "steps":
		return fmt.Sprintf("%s: the render took more than %d steps: loop iterations, calls (steps limit)", ErrLimit, e.Max)
	case "time":
		return fmt.Sprintf("%s: the render ran longer than %s (time limit)", ErrLimit, time.Duration(e.Max))
	case "nesting":
		return fmt.Sprintf("%s: brackets nest more than %d deep in the template (nesting limit)", ErrLimit, e.Max)
	}
	return fmt.Sprintf("%s: %s limit %d", ErrLimit, e.Limit, e.Max)
}

func (e *LimitError) Unwrap() error { return ErrLimit }

// sandboxError is a refusal of something the sandbox does not offer.
type sandboxError struct{ msg string }

func (e *sandboxError) Error() string { return fmt.Sprintf("%s %s", e.msg, ErrSandbox) }
func (e *sandboxError) Unwrap() error { return ErrSandbox }

func refused(format string, a ...any) error {
	return &sandboxError{msg: fmt.Sprintf(format, a...)}
}

// Budget is what one render may spend. Renders nested in it share it. It
// is not safe for concurrent use: one render runs on one goroutine. Once a
// limit is passed every later charge fails too (a template cannot catch
// the error and carry on).
type Budget struct {
	depth    int
	output   int64
	values   int64
	steps    int64
	deadline time.Time
	err      error
}

// renderTime is MaxRenderTime, shortened by tests.
var renderTime = MaxRenderTime

// NewBudget starts the budget of one render.
func NewBudget() *Budget {
	return &Budget{deadline: time.Now().Add(renderTime)}
}

// Err is the limit the render passed, nil while within its budget.
func (b *Budget) Err() error { return b.err }

func (b *Budget) fail(err error) error {
	if b.err == nil {
		b.err = err
	}
	return b.err
}

// flatten returns the limit a nested render passed as it is, rather than
// wrapped once per level of nesting; other errors are returned unchanged.
func (b *Budget) flatten(err error) error {
	if b.err != nil && errors.Is(err, ErrLimit) {
		return b.err
	}
	return err
}

// Enter starts a nested render (what names it in no error: the caller
// adds it); leave ends it.
func (b *Budget) Enter() (leave func(), err error) {
	if b.err != nil {
		return nil, b.err
	}
	if b.depth >= MaxRenderDepth {
		return nil, b.fail(&LimitError{Limit: "depth", Max: MaxRenderDepth})
	}
	b.depth++
	return func() { b.depth-- }, nil
}

// Step charges n steps and checks the time.
func (b *Budget) Step(n int64) error {
	if b.err != nil {
		return b.err
	}
	if n < 0 || n > MaxRenderSteps-b.steps {
		return b.fail(&LimitError{Limit: "steps", Max: MaxRenderSteps})
	}
	b.steps += n
	if time.Now().After(b.deadline) {
		return b.fail(&LimitError{Limit: "time", Max: int64(renderTime)})
	}
	return nil
}

// Values charges n bytes of values built.
func (b *Budget) Values(n int64) error {
	if b.err != nil {
		return b.err
	}
	if n < 0 || n > MaxRenderValues-b.values {
		return b.fail(&LimitError{Limit: "values", Max: MaxRenderValues})
	}
	b.values += n
	return nil
}

// Output charges n bytes written.
func (b *Budget) Output(n int64) error {
	if b.err != nil {
		return b.err
	}
	if n < 0 || n > MaxRenderOutput-b.output {
		return b.fail(&LimitError{Limit: "output", Max: MaxRenderOutput})
	}
	b.output += n
	return nil
}

// Writer bounds w by the budget's output: a write past the limit writes
// nothing and fails, as does every write after it.
func (b *Budget) Writer(w io.Writer) io.Writer { return &budgetWriter{w: w, b: b} }

type budgetWriter struct {
	w io.Writer
	b *Budget
}

func (bw *budgetWriter) Write(p []byte) (int, error) {
	if err := bw.b.Output(int64(len(p))); err != nil {
		return 0, err
	}
	return bw.w.Write(p)
}

// panicWriter is a budgetWriter for Jet, which ignores some write errors:
// it panics with the error (an error value, which Jet's Execute returns).
type panicWriter struct{ budgetWriter }

func (pw *panicWriter) Write(p []byte) (int, error) {
	n, err := pw.budgetWriter.Write(p)
	if err != nil {
		panic(err)
	}
	return n, nil
}

// ErrEngine is wrapped by the error of a render whose template engine
// panicked (a bug in the engine that the template found).
var ErrEngine = errors.New("the template engine failed")

// recoverEngine turns a panic of a template engine into an error in *err.
func recoverEngine(name string, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("template %s: %w: %v", name, ErrEngine, r)
	}
}

// checkNesting refuses a template source whose brackets nest deeper than
// MaxTemplateNesting (counted without regard to quotes: a bound, not a
// parse).
func checkNesting(src string) error {
	depth, most := 0, 0
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '(', '[', '{':
			depth++
			if depth > most {
				most = depth
			}
		case ')', ']', '}':
			if depth > 0 {
				depth--
			}
		}
	}
	if most > MaxTemplateNesting {
		return &LimitError{Limit: "nesting", Max: MaxTemplateNesting}
	}
	return nil
}

// sizeOf is what a value built by a function or operator costs the
// values budget: the bytes of a string, the elements of a list or map
// (each at least 16 bytes), plus the bytes of their strings one level down.
func sizeOf(v reflect.Value) int64 {
	if !v.IsValid() {
		return 0
	}
	for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return 0
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.String:
		return int64(v.Len())
	case reflect.Slice, reflect.Array:
		n := int64(v.Len()) * 16
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return int64(v.Len())
		}
		for i := 0; i < v.Len() && i < 1024; i++ {
			if e := elem(v.Index(i)); e.Kind() == reflect.String {
				n += int64(e.Len())
			}
		}
		return n
	case reflect.Map:
		return int64(v.Len()) * 32
	}
	return 0
}

func elem(v reflect.Value) reflect.Value {
	for v.Kind() == reflect.Interface && !v.IsNil() {
		v = v.Elem()
	}
	return v
}

// rangeCost is what ranging over v costs the steps budget: one step to
// start and one per element. ok is false for what the sandbox does not
// range over (functions: iterators whose length is not known).
func rangeCost(v reflect.Value) (int64, bool) {
	v = elem(v)
	if !v.IsValid() {
		return 1, true
	}
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map, reflect.String:
		return int64(v.Len()) + 1, true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.Int() < 0 {
			return 1, true
		}
		if v.Int() >= MaxRenderSteps {
			return MaxRenderSteps + 1, true
		}
		return v.Int() + 1, true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if v.Uint() >= MaxRenderSteps {
			return MaxRenderSteps + 1, true
		}
		return int64(v.Uint()) + 1, true
	case reflect.Func:
		return 0, false
	}
	return 1, true
}

// exprValueFunc is the function the sandbox wraps an expression's + and
// its builtins that build strings or lists in (exprCharges), so that what
// they build is charged as values: expr's own memory budget does not count
// strings, and reduce(1..40, #acc + #acc, "xx") doubles one 40 times.
const exprValueFunc = jetReserved + "value"

// exprGrowing are expr's builtins whose result may be larger than their
// arguments.
var exprGrowing = map[string]bool{"join": true, "replace": true, "repeat": true, "toJSON": true, "toBase64": true,
	"concat": true, "flatten": true, "upper": true, "lower": true, "split": true, "splitAfter": true}

// exprCharges patches compiled expressions: every + and every growing
// builtin passes its result through exprValueFunc.
type exprCharges struct{}

func (exprCharges) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.BinaryNode:
		if n.Operator != "+" {
			return
		}
	case *ast.BuiltinNode:
		if !exprGrowing[n.Name] {
			return
		}
	default:
		return
	}
	ast.Patch(node, &ast.CallNode{Callee: &ast.IdentifierNode{Value: exprValueFunc}, Arguments: []ast.Node{*node}})
}

// valueFunc is exprValueFunc over e's budget.
func (e *Env) valueFunc(params ...any) (any, error) {
	if len(params) != 1 {
		return nil, fmt.Errorf("%s takes one argument", exprValueFunc)
	}
	if err := e.budget.Values(sizeOf(reflect.ValueOf(params[0]))); err != nil {
		return nil, err
	}
	return params[0], nil
}
