package templates

import (
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	gotemplate "text/template"
	"text/template/parse"

	"github.com/Masterminds/sprig/v3"
)

// Names the sandbox gives its own functions in a Go template; a template
// may not use them.
const (
	goRangeFunc = jetReserved + "range"
	goStepFunc  = jetReserved + "step"
)

// GoRender is one Go text/template rendered in the sandbox.
type GoRender struct {
	// Name names the template in errors.
	Name string
	// Body is the template's text.
	Body string
	// Left and Right are the delimiters ({{ }} when empty).
	Left, Right string
	// Funcs are the caller's functions, over the sandbox's Sprig.
	Funcs gotemplate.FuncMap
	// Data is the template's dot.
	Data any
}

// goRefused are the Sprig functions the sandbox refuses: they read the
// process's environment or ask DNS.
var goRefused = []string{"env", "expandenv", "getHostByName"}

// goHeavy are the Sprig functions that cost much CPU per call (key
// generation, password hashing): each call costs heavyCost steps.
var goHeavy = []string{"genPrivateKey", "buildCustomCert", "genCA", "genCAWithKey", "genSelfSignedCert",
	"genSelfSignedCertWithKey", "genSignedCert", "genSignedCertWithKey", "bcrypt", "htpasswd", "derivePassword"}

const heavyCost = 1000

// randCost is what one byte of random text (randAlpha …, randBytes) costs
// the values budget: at most 1 MiB of it per render.
const randCost = MaxRenderValues >> 20

// SandboxGo renders r to w within b: Sprig without env, expandenv and
// getHostByName, with the functions that allocate by an argument (repeat,
// until, untilStep, seq, indent, nindent, rand*, replace, join …)
// bounded; templates that call each other in a cycle are refused; output,
// range iterations, calls and the values functions build are charged to b.
func SandboxGo(w io.Writer, b *Budget, r GoRender) (err error) {
	defer recoverEngine(r.Name, &err)
	if err := b.Err(); err != nil {
		return err
	}
	if err := checkNesting(r.Body); err != nil {
		return b.fail(err)
	}
	if strings.Contains(r.Body, jetReserved) {
		return refused("the names %s… are reserved:", jetReserved)
	}
	name := r.Name
	if name == "" {
		name = "template"
	}
	t := gotemplate.New(name).Funcs(GoFuncs(b, r.Funcs))
	if r.Left != "" && r.Right != "" {
		t.Delims(r.Left, r.Right)
	}
	t, err = t.Parse(r.Body)
	if err != nil {
		return fmt.Errorf("parsing template %v failed: %w", name, err)
	}
	if err := prepareGo(t); err != nil {
		return err
	}
	err = t.Execute(b.Writer(w), r.Data)
	if berr := b.Err(); berr != nil {
		return berr
	}
	return err
}

// GoFuncs is the sandbox's function set for Go templates with extra
// (the caller's functions) over it: every function charged to b (a step
// per call, its result as values).
func GoFuncs(b *Budget, extra gotemplate.FuncMap) gotemplate.FuncMap {
	funcs := gotemplate.FuncMap{}
	for name, f := range sprig.TxtFuncMap() {
		funcs[name] = f
	}
	for name, f := range boundedGoFuncs(b) {
		funcs[name] = f
	}
	for name, f := range extra {
		funcs[name] = f
	}
	for _, name := range goRefused {
		funcs[name] = goRefuse(name)
	}
	for name, f := range funcs {
		cost := int64(1)
		for _, h := range goHeavy {
			if h == name {
				cost = heavyCost
			}
		}
		funcs[name] = chargeGo(b, name, f, cost)
	}
	funcs[goRangeFunc] = func(v any) (any, error) {
		cost, ok := rangeCost(reflect.ValueOf(v))
		if !ok {
			return nil, refused("ranging over %T is", v)
		}
		return v, b.Step(cost)
	}
	funcs[goStepFunc] = func() (string, error) { return "", b.Step(1) }
	return funcs
}

func goRefuse(name string) func(...any) (string, error) {
	return func(...any) (string, error) {
		return "", refused("%s is", name)
	}
}

var errorType = reflect.TypeOf((*error)(nil)).Elem()

// chargeGo wraps f (a function of any signature) so that each call costs
// cost steps and its first result is charged as values.
func chargeGo(b *Budget, name string, f any, cost int64) any {
	fv := reflect.ValueOf(f)
	ft := fv.Type()
	if ft.Kind() != reflect.Func {
		return f
	}
	hasErr := ft.NumOut() == 2 && ft.Out(1) == errorType
	fail := func(err error) []reflect.Value {
		if !hasErr {
			panic(err) // text/template makes a function's panic an error
		}
		out := []reflect.Value{reflect.Zero(ft.Out(0)), reflect.ValueOf(&err).Elem()}
		return out
	}
	return reflect.MakeFunc(ft, func(args []reflect.Value) []reflect.Value {
		if err := b.Step(cost); err != nil {
			return fail(fmt.Errorf("%s: %w", name, err))
		}
		var out []reflect.Value
		if ft.IsVariadic() {
			out = fv.CallSlice(args)
		} else {
			out = fv.Call(args)
		}
		if len(out) > 0 {
			if err := b.Values(sizeOf(out[0])); err != nil {
				return fail(fmt.Errorf("%s: %w", name, err))
			}
		}
		return out
	}).Interface()
}

// boundedGoFuncs replace the Sprig functions (and text/template builtins)
// that build a value whose size an argument chooses: they charge it first.
func boundedGoFuncs(b *Budget) gotemplate.FuncMap {
	sp := sprig.TxtFuncMap()
	join := sp["join"].(func(string, any) string)
	regexReplace := map[string]any{}
	for _, n := range []string{"regexReplaceAll", "regexReplaceAllLiteral"} {
		f := sp[n].(func(string, string, string) string)
		regexReplace[n] = func(regex, s, repl string) (string, error) {
			if err := chargeProduct(b, len(s)+1, len(repl), len(s)); err != nil {
				return "", err
			}
			return f(regex, s, repl), nil
		}
	}
	for _, n := range []string{"mustRegexReplaceAll", "mustRegexReplaceAllLiteral"} {
		f := sp[n].(func(string, string, string) (string, error))
		regexReplace[n] = func(regex, s, repl string) (string, error) {
			if err := chargeProduct(b, len(s)+1, len(repl), len(s)); err != nil {
				return "", err
			}
			return f(regex, s, repl)
		}
	}
	rand := func(name string) any {
		f := sp[name].(func(int) string)
		return func(n int) (string, error) {
			// Random text is slow to make: each byte costs randCost.
			if err := chargeProduct(b, n, randCost, 0); err != nil {
				return "", err
			}
			return f(n), nil
		}
	}
	indent := func(nl bool) any {
		return func(spaces int, v string) (string, error) {
			if spaces < 0 {
				spaces = 0
			}
			if err := chargeProduct(b, strings.Count(v, "\n")+1, spaces, len(v)+1); err != nil {
				return "", err
			}
			pad := strings.Repeat(" ", spaces)
			out := pad + strings.ReplaceAll(v, "\n", "\n"+pad)
			if nl {
				out = "\n" + out
			}
			return out, nil
		}
	}
	funcs := gotemplate.FuncMap{
		"repeat": func(count int, s string) (string, error) { return boundedRepeat(b, s, int64(count)) },
		"until": func(n int) ([]int, error) {
			step := 1
			if n < 0 {
				step = -1
			}
			return boundedInts(b, 0, n, step)
		},
		"untilStep":    func(start, stop, step int) ([]int, error) { return boundedInts(b, start, stop, step) },
		"seq":          func(params ...int) (string, error) { return boundedSeq(b, params...) },
		"indent":       indent(false),
		"nindent":      indent(true),
		"randAlphaNum": rand("randAlphaNum"),
		"randAlpha":    rand("randAlpha"),
		"randAscii":    rand("randAscii"),
		"randNumeric":  rand("randNumeric"),
		"randBytes": func(n int) (string, error) {
			if err := chargeProduct(b, n, randCost, 0); err != nil {
				return "", err
			}
			return sp["randBytes"].(func(int) (string, error))(n)
		},
		"replace": func(old, repl, s string) (string, error) {
			if err := chargeReplace(b, s, old, repl, -1); err != nil {
				return "", err
			}
			return strings.ReplaceAll(s, old, repl), nil
		},
		"join": func(sep string, v any) (string, error) {
			n := 1
			if rv := elem(reflect.ValueOf(v)); rv.IsValid() && (rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array) {
				n = rv.Len()
			}
			if err := chargeProduct(b, n, len(sep)+16, 0); err != nil {
				return "", err
			}
			return join(sep, v), nil
		},
		"chunk": func(size int, list any) ([][]any, error) {
			if size < 1 {
				return nil, errors.New("chunk: the size must be at least 1")
			}
			return sp["mustChunk"].(func(int, any) ([][]any, error))(size, list)
		},
		"printf":   fmt.Sprintf,
		"print":    fmt.Sprint,
		"println":  fmt.Sprintln,
		"html":     func(args ...any) string { return gotemplate.HTMLEscapeString(fmt.Sprint(args...)) },
		"js":       func(args ...any) string { return gotemplate.JSEscapeString(fmt.Sprint(args...)) },
		"urlquery": func(args ...any) string { return gotemplate.URLQueryEscaper(args...) },
	}
	for n, f := range regexReplace {
		funcs[n] = f
	}
	return funcs
}

// chargeProduct charges n*size+extra bytes of values, refusing first
// what would overflow.
func chargeProduct(b *Budget, n, size, extra int) error {
	if n < 0 {
		return fmt.Errorf("negative count %d", n)
	}
	if size > 0 && int64(n) > MaxRenderValues/int64(size) {
		return b.fail(&LimitError{Limit: "values", Max: MaxRenderValues})
	}
	return b.Values(int64(n)*int64(size) + int64(extra))
}

// count is how many values start, start+step … come before stop
// (math.MaxInt64 at most).
func count(start, stop, step int) int64 {
	var diff, by uint64
	switch {
	case step > 0 && stop > start:
		diff, by = uint64(stop)-uint64(start), uint64(step)
	case step < 0 && stop < start:
		diff, by = uint64(start)-uint64(stop), -uint64(step)
	default:
		return 0
	}
	n := (diff-1)/by + 1
	if n > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(n)
}

// boundedSeq is Sprig's seq (seq END, seq START END, seq START STEP END:
// the numbers from START to END inclusive, counting down when END is
// smaller) charging what it builds first.
func boundedSeq(b *Budget, params ...int) (string, error) {
	var start, end, step int
	switch len(params) {
	case 1:
		start, end, step = 1, params[0], 1
		if end < start {
			step = -1
		}
		end += step
	case 2:
		start, end, step = params[0], params[1], 1
		if end < start {
			step = -1
		}
		end += step
	case 3:
		start, step, end = params[0], params[1], params[2]
		inc := 1
		if end < start {
			inc = -1
			if step > 0 {
				return "", nil
			}
		}
		end += inc
	default:
		return "", nil
	}
	n := count(start, end, step)
	if n > MaxRenderValues/24 {
		return "", b.fail(&LimitError{Limit: "values", Max: MaxRenderValues})
	}
	ints, err := boundedInts(b, start, end, step)
	if err != nil {
		return "", err
	}
	if err := b.Values(n * 16); err != nil {
		return "", err
	}
	var out strings.Builder
	for i, v := range ints {
		if i > 0 {
			out.WriteByte(' ')
		}
		out.WriteString(strconv.Itoa(v))
	}
	return out.String(), nil
}

// boundedInts is Sprig's untilStep charging its length first (as values:
// ranging over it charges the steps).
func boundedInts(b *Budget, start, stop, step int) ([]int, error) {
	if step == 0 {
		return []int{}, nil
	}
	n := count(start, stop, step)
	if n > MaxRenderValues/8 {
		return nil, b.fail(&LimitError{Limit: "values", Max: MaxRenderValues})
	}
	if err := b.Values(n * 8); err != nil {
		return nil, err
	}
	out := make([]int, 0, n)
	for i := start; (step > 0 && i < stop) || (step < 0 && i > stop); i += step {
		out = append(out, i)
	}
	return out, nil
}

// prepareGo rewrites t's trees so that every range charges its length
// and every template call a step, and refuses templates that call each
// other in a cycle.
func prepareGo(t *gotemplate.Template) error {
	calls := map[string][]string{}
	for _, tt := range t.Templates() {
		if tt.Tree == nil || tt.Root == nil {
			continue
		}
		var out []string
		goWalk(tt.Tree, tt.Root, &out)
		calls[tt.Name()] = out
		step := &parse.ActionNode{NodeType: parse.NodeAction, Pos: tt.Root.Pos, Line: 0,
			Pipe: &parse.PipeNode{NodeType: parse.NodePipe, Pos: tt.Root.Pos, Cmds: []*parse.CommandNode{goCommand(tt.Tree, tt.Root.Pos, goStepFunc)}}}
		tt.Root.Nodes = append([]parse.Node{step}, tt.Root.Nodes...)
	}
	state := map[string]int{} // 1 open, 2 done
	var visit func(string) error
	visit = func(n string) error {
		switch state[n] {
		case 1:
			return refused("template %q calls itself (recursion) and is", n)
		case 2:
			return nil
		}
		state[n] = 1
		for _, c := range calls[n] {
			if err := visit(c); err != nil {
				return err
			}
		}
		state[n] = 2
		return nil
	}
	for n := range calls {
		if err := visit(n); err != nil {
			return err
		}
	}
	return nil
}

func goCommand(tr *parse.Tree, pos parse.Pos, fn string) *parse.CommandNode {
	return &parse.CommandNode{NodeType: parse.NodeCommand, Pos: pos,
		Args: []parse.Node{parse.NewIdentifier(fn).SetTree(tr).SetPos(pos)}}
}

// goWalk rewrites the ranges below n and collects the templates it calls.
func goWalk(tr *parse.Tree, n parse.Node, calls *[]string) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			goWalk(tr, c, calls)
		}
	case *parse.IfNode:
		goWalk(tr, n.List, calls)
		goWalk(tr, n.ElseList, calls)
	case *parse.WithNode:
		goWalk(tr, n.List, calls)
		goWalk(tr, n.ElseList, calls)
	case *parse.RangeNode:
		n.Pipe.Cmds = append(n.Pipe.Cmds, goCommand(tr, n.Pipe.Pos, goRangeFunc))
		goWalk(tr, n.List, calls)
		goWalk(tr, n.ElseList, calls)
	case *parse.TemplateNode:
		*calls = append(*calls, n.Name)
	}
}
