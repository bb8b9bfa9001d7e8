package templates

import (
	"fmt"
	"html"
	"io"
	"net/url"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/CloudyKit/jet/v6"
)

// Names the sandbox gives its own functions in a Jet template's tree; a
// template may not use them.
const (
	jetReserved  = "ccm_sandbox_"
	jetRangeFunc = jetReserved + "range"
	jetValueFunc = jetReserved + "value"
	jetStepFunc  = jetReserved + "step"
)

// JetRender is one Jet template rendered in the sandbox.
type JetRender struct {
	// Name names the template in errors.
	Name string
	// Body is the template's text.
	Body string
	// Left and Right are the delimiters ([[ ]] when empty).
	Left, Right string
	// Funcs are the caller's functions (they may replace Jet's builtins
	// but not the sandbox's refusals of exec and includeIfExists).
	Funcs map[string]jet.Func
	// Vars are the template's variables; Dot is its context (.).
	Vars jet.VarMap
	Dot  any
}

// SandboxJet renders r to w within b: the template is refused if it uses
// include, import, extends, try or exec, or if its blocks call each other
// in a cycle; its output, loops, calls and the values its + and its
// functions build are charged to b.
func SandboxJet(w io.Writer, b *Budget, r JetRender) (err error) {
	// Jet re-panics Go runtime errors (a nil pointer in its own code, as
	// [[ range _ ]] gives); no template may end the process.
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
	left, right := r.Left, r.Right
	if left == "" || right == "" {
		left, right = "[[", "]]"
	}
	if err := checkJetLexer(r.Body, left, right); err != nil {
		return err
	}
	// An empty loader: import, extends, include and exec find no template,
	// never this one again.
	set := jet.NewSet(jet.NewInMemLoader(), jet.WithDelims(left, right),
		jet.WithSafeWriter(func(w io.Writer, p []byte) {
			if _, err := w.Write(p); err != nil {
				panic(err)
			}
		}))
	for name, f := range jetSandboxFuncs(b, r.Funcs) {
		set.AddGlobalFunc(name, f)
	}
	name := r.Name
	if name == "" {
		name = "template"
	}
	tpl, err := set.Parse(name, r.Body)
	if err != nil {
		return err
	}
	if err := prepareJet(tpl); err != nil {
		return err
	}
	vars := r.Vars
	if vars == nil {
		vars = jet.VarMap{}
	}
	err = tpl.Execute(&panicWriter{budgetWriter{w: w, b: b}}, vars, r.Dot)
	if berr := b.Err(); berr != nil {
		return berr
	}
	return err
}

// jetSandboxFuncs are the functions of a sandboxed Jet template: Jet's
// builtins that allocate by an argument replaced by bounded ones, exec and
// includeIfExists refused, the caller's funcs, and the sandbox's own; each
// call is a step, what it returns is charged as values.
func jetSandboxFuncs(b *Budget, caller map[string]jet.Func) map[string]jet.Func {
	funcs := map[string]jet.Func{
		"exec":            jetRefuse("exec()"),
		"includeIfExists": jetRefuse("includeIfExists()"),
		"repeat":          jetRepeat(b),
		"replace":         jetReplace(b),
		"ints":            jetInts(b),
		"html":            jetString("html", html.EscapeString),
		"url":             jetString("url", url.QueryEscape),
	}
	for name, f := range caller {
		if name == "exec" || name == "includeIfExists" {
			continue
		}
		funcs[name] = f
	}
	for name, f := range funcs {
		funcs[name] = jetCharged(b, f)
	}
	funcs[jetRangeFunc] = func(a jet.Arguments) reflect.Value {
		v := a.Get(0)
		cost, ok := rangeCost(v)
		if !ok {
			panic(refused("ranging over %s is", v.Type()))
		}
		if err := b.Step(cost); err != nil {
			panic(err)
		}
		return v
	}
	funcs[jetValueFunc] = func(a jet.Arguments) reflect.Value {
		v := a.Get(0)
		if err := b.Values(sizeOf(v)); err != nil {
			panic(err)
		}
		return v
	}
	funcs[jetStepFunc] = func(a jet.Arguments) reflect.Value {
		if err := b.Step(1); err != nil {
			panic(err)
		}
		return reflect.ValueOf("")
	}
	return funcs
}

func jetCharged(b *Budget, f jet.Func) jet.Func {
	return func(a jet.Arguments) reflect.Value {
		if err := b.Step(1); err != nil {
			panic(err)
		}
		v := f(a)
		if err := b.Values(sizeOf(v)); err != nil {
			panic(err)
		}
		return v
	}
}

func jetRefuse(what string) jet.Func {
	return func(jet.Arguments) reflect.Value {
		panic(refused("%s is", what))
	}
}

func jetString(name string, f func(string) string) jet.Func {
	return func(a jet.Arguments) reflect.Value {
		a.RequireNumOfArguments(name, 1, 1)
		var s string
		if err := a.ParseInto(&s); err != nil {
			a.Panicf("%s: %v", name, err)
		}
		return reflect.ValueOf(f(s))
	}
}

func jetRepeat(b *Budget) jet.Func {
	return func(a jet.Arguments) reflect.Value {
		a.RequireNumOfArguments("repeat", 2, 2)
		var s string
		var n int64
		if err := a.ParseInto(&s, &n); err != nil {
			a.Panicf("repeat: %v", err)
		}
		s2, err := boundedRepeat(b, s, n)
		if err != nil {
			panic(err)
		}
		return reflect.ValueOf(s2)
	}
}

// boundedRepeat is strings.Repeat charging the result to b's values first.
func boundedRepeat(b *Budget, s string, n int64) (string, error) {
	if n < 0 {
		return "", fmt.Errorf("repeat: negative count %d", n)
	}
	if len(s) > 0 && n > MaxRenderValues/int64(len(s)) {
		return "", b.fail(&LimitError{Limit: "values", Max: MaxRenderValues})
	}
	if err := b.Values(n * int64(len(s))); err != nil {
		return "", err
	}
	return strings.Repeat(s, int(n)), nil
}

func jetReplace(b *Budget) jet.Func {
	return func(a jet.Arguments) reflect.Value {
		a.RequireNumOfArguments("replace", 4, 4)
		var s, old, repl string
		var n int
		if err := a.ParseInto(&s, &old, &repl, &n); err != nil {
			a.Panicf("replace: %v", err)
		}
		if err := chargeReplace(b, s, old, repl, n); err != nil {
			panic(err)
		}
		return reflect.ValueOf(strings.Replace(s, old, repl, n))
	}
}

// chargeReplace charges what strings.Replace(s, old, repl, n) builds
// before it is built.
func chargeReplace(b *Budget, s, old, repl string, n int) error {
	var count int64
	if old == "" {
		count = int64(utf8.RuneCountInString(s)) + 1
	} else {
		count = int64(strings.Count(s, old))
	}
	if n >= 0 && int64(n) < count {
		count = int64(n)
	}
	grow := int64(len(repl)) - int64(len(old))
	if grow > 0 && count > MaxRenderValues/grow {
		return b.fail(&LimitError{Limit: "values", Max: MaxRenderValues})
	}
	return b.Values(int64(len(s)) + max(grow, 0)*count)
}

// jetInts is Jet's ints(from, to) ranger, charging a step per value.
func jetInts(b *Budget) jet.Func {
	return func(a jet.Arguments) reflect.Value {
		var from, to int64
		if err := a.ParseInto(&from, &to); err != nil {
			a.Panicf("ints: %v", err)
		}
		if to <= from {
			a.Panicf("invalid range for ints ranger: 'from' must be smaller than 'to'")
		}
		return reflect.ValueOf(&intsRanger{b: b, i: -1, val: from - 1, to: to})
	}
}

type intsRanger struct {
	b          *Budget
	i, val, to int64
}

func (r *intsRanger) Range() (reflect.Value, reflect.Value, bool) {
	if err := r.b.Step(1); err != nil {
		panic(err)
	}
	r.i++
	r.val++
	return reflect.ValueOf(r.i), reflect.ValueOf(r.val), r.val == r.to
}

func (r *intsRanger) ProvidesIndex() bool { return true }

// checkJetLexer refuses what Jet's lexer cannot read without a panic in
// its own goroutine, which no recover reaches and which ends the process:
// inside an action, "_" followed by a letter or digit of more than one byte
// ([[_ߧ ]], found by FuzzRenderJet) makes it step back past the start of
// the identifier.
func checkJetLexer(body, left, right string) error {
	for rest := body; ; {
		i := strings.Index(rest, left)
		if i < 0 {
			return nil
		}
		rest = rest[i+len(left):]
		action := rest
		if j := strings.Index(rest, right); j >= 0 {
			action = rest[:j]
		}
		for k := strings.IndexByte(action, '_'); k >= 0; k = strings.IndexByte(action, '_') {
			action = action[k+1:]
			if r, w := utf8.DecodeRuneInString(action); w > 1 && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
				return refused("an identifier starting with _ and a non-ASCII letter (%q) is", "_"+string(r))
			}
		}
	}
}

var jetExpressionType = reflect.TypeOf((*jet.Expression)(nil)).Elem()

// prepareJet checks a parsed template against the sandbox and rewrites
// it so that it charges its budget: every range expression passes
// through ccm_sandbox_range (a step per element), every + through
// ccm_sandbox_value (its result's bytes) and every block starts with
// ccm_sandbox_step. It refuses include and try (a try block buffers what
// it writes where no limit sees it), and blocks that call each other in a
// cycle or more than MaxRenderSteps times in all.
func prepareJet(tpl *jet.Template) error {
	p := &jetPrep{calls: map[string][]string{}, blocks: map[string]*jet.BlockNode{}, seen: map[uintptr]bool{}}
	if err := p.walk(reflect.ValueOf(tpl.Root), ""); err != nil {
		return err
	}
	for _, block := range p.blocks {
		if block.List == nil {
			continue
		}
		step := &jet.ActionNode{
			NodeBase: jet.NodeBase{NodeType: jet.NodeAction, Pos: block.Pos, Line: block.Line, TemplatePath: block.TemplatePath},
			Pipe: &jet.PipeNode{Cmds: []*jet.CommandNode{{
				NodeBase:     jet.NodeBase{NodeType: jet.NodeCommand, Pos: block.Pos, Line: block.Line, TemplatePath: block.TemplatePath},
				CallExprNode: *jetCall(block.NodeBase, jetStepFunc),
			}}},
		}
		block.List.Nodes = append([]jet.Node{step}, block.List.Nodes...)
	}
	total, err := p.count("", map[string]int64{}, map[string]bool{})
	if err != nil {
		return err
	}
	if total > MaxRenderSteps {
		return &LimitError{Limit: "steps", Max: MaxRenderSteps}
	}
	return nil
}

type jetPrep struct {
	// calls are the blocks each block ("" the template itself) runs.
	calls  map[string][]string
	blocks map[string]*jet.BlockNode
	seen   map[uintptr]bool
}

// count is how many block calls running name makes (capped past
// MaxRenderSteps); a block that reaches itself is refused.
func (p *jetPrep) count(name string, memo map[string]int64, open map[string]bool) (int64, error) {
	if n, ok := memo[name]; ok {
		return n, nil
	}
	if open[name] {
		return 0, refused("block %s calls itself (recursion) and is", name)
	}
	open[name] = true
	var n int64 = 1
	for _, c := range p.calls[name] {
		m, err := p.count(c, memo, open)
		if err != nil {
			return 0, err
		}
		n += m
		if n > MaxRenderSteps {
			n = MaxRenderSteps + 1
		}
	}
	open[name] = false
	memo[name] = n
	return n, nil
}

func jetCall(at jet.NodeBase, fn string, args ...jet.Expression) *jet.CallExprNode {
	base := jet.NodeBase{Pos: at.Pos, Line: at.Line, TemplatePath: at.TemplatePath}
	ident := base
	ident.NodeType = jet.NodeIdentifier
	call := base
	call.NodeType = jet.NodeCallExpr
	if args == nil {
		args = []jet.Expression{}
	}
	return &jet.CallExprNode{NodeBase: call, BaseExpr: &jet.IdentifierNode{NodeBase: ident, Ident: fn}, CallArgs: jet.CallArgs{Exprs: args}}
}

func wrapExpr(e jet.Expression, fn string) jet.Expression {
	var at jet.NodeBase
	if nb := reflect.ValueOf(e).Elem().FieldByName("NodeBase"); nb.IsValid() {
		at = nb.Interface().(jet.NodeBase)
	}
	return jetCall(at, fn, e)
}

// walk visits v (a node, or a value holding nodes) below the block in.
func (p *jetPrep) walk(v reflect.Value, in string) error {
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return p.walk(v.Elem(), in)
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		if p.seen[v.Pointer()] {
			return nil
		}
		p.seen[v.Pointer()] = true
		if !v.CanInterface() {
			return p.walk(v.Elem(), in)
		}
		switch n := v.Interface().(type) {
		case *jet.IncludeNode:
			return refused("include is")
		case *jet.TryNode:
			return refused("try is")
		case *jet.BlockNode:
			p.calls[in] = append(p.calls[in], n.Name)
			p.blocks[n.Name] = n
			in = n.Name
		case *jet.YieldNode:
			if !n.IsContent {
				p.calls[in] = append(p.calls[in], n.Name)
			}
			if err := p.walk(reflect.ValueOf(n.Parameters), in); err != nil {
				return err
			}
			if err := p.walk(reflect.ValueOf(&n.Expression).Elem(), in); err != nil {
				return err
			}
			// The content runs inside the block it is given to.
			return p.walk(reflect.ValueOf(n.Content), n.Name)
		case *jet.RangeNode:
			if err := p.walk(v.Elem(), in); err != nil {
				return err
			}
			if n.Set != nil && len(n.Set.Right) > 0 {
				n.Set.Right[0] = wrapExpr(n.Set.Right[0], jetRangeFunc)
			} else if n.Expression != nil {
				n.Expression = wrapExpr(n.Expression, jetRangeFunc)
			}
			return nil
		}
		return p.walk(v.Elem(), in)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			f := v.Field(i)
			if err := p.walk(f, in); err != nil {
				return err
			}
			if f.Type() == jetExpressionType && f.CanSet() {
				p.wrapAdditive(f)
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			f := v.Index(i)
			if err := p.walk(f, in); err != nil {
				return err
			}
			if f.Type() == jetExpressionType && f.CanSet() {
				p.wrapAdditive(f)
			}
		}
	}
	return nil
}

// wrapAdditive makes the + in f charge the bytes of its result.
func (p *jetPrep) wrapAdditive(f reflect.Value) {
	if f.IsNil() {
		return
	}
	if add, ok := f.Interface().(*jet.AdditiveExprNode); ok {
		f.Set(reflect.ValueOf(wrapExpr(add, jetValueFunc)))
	}
}
