package protocol

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The select language: a compound expression over --where terms, for
// --select (-S) and for policy hosts scopes (select: EXPR).
//
//	expr    = or
//	or      = and { "or" and }
//	and     = not { "and" not }
//	not     = "not" not | primary
//	primary = "(" expr ")" | term
//	term    = key op value        (op: = != =~ !~ < <= > >=, as --where)
//	value   = bare | "double quoted" | 'single quoted'
//
// Precedence is not > and > or; and and or group left to right (they are
// associative, so a parsed expression keeps them as lists). Keywords are
// lower case and stand alone: followed by whitespace, '(' or the end, so a
// fact may be named "not" (not=1). A term is written without spaces, as a
// --where term on a command line is: os=debian, not os = debian. A bare
// value runs to whitespace or to a ')' it did not open, so
// os=~^(debian|ubuntu)$ needs no quotes; a value with whitespace, or empty
// (""), is quoted. In double quotes \" and \\ are escapes and every other
// byte (a regex's \d included) is itself; single quotes hold anything but
// a single quote. Each term is checked exactly as a --where term is, and
// matched by the same code.

// ErrSelect is wrapped by every error about a select expression, beside
// ErrBadRequest; the message starts with the 1-based character position
// of the fault: "at 17: expected ')'".
var ErrSelect = errors.New("invalid select expression")

// Select expression bounds, applied to parsed and received expressions.
const (
	// MaxSelectLength is the longest expression, in bytes.
	MaxSelectLength = 4096
	// MaxSelectDepth is the deepest nesting of parentheses and "not".
	MaxSelectDepth = 32
	// MaxSelectTerms is the most terms one expression may hold.
	MaxSelectTerms = MaxFilterTerms
)

// Select node operators, the Op of a SelectNode.
const (
	SelectTerm = "term"
	SelectAnd  = "and"
	SelectOr   = "or"
	SelectNot  = "not"
)

// SelectNode is one node of a parsed select expression: a term, "not" of
// one node, or "and"/"or" of two or more nodes (never of a node of the
// same operator: the parser flattens them).
type SelectNode struct {
	Op    string       `json:"op"`
	Term  *FilterTerm  `json:"term,omitempty"`
	Nodes []SelectNode `json:"nodes,omitempty"`
}

// Select is a parsed and compiled select expression. It is safe for
// concurrent Match calls.
type Select struct {
	// Root is the expression's tree.
	Root SelectNode
	eval selectEval
}

// selectEval is a SelectNode with its terms compiled.
type selectEval struct {
	op   string
	term *compiledTerm
	kids []selectEval
}

// ParseSelect parses and compiles a select expression. Errors wrap
// ErrBadRequest and ErrSelect and start with the position of the fault,
// "at 17: expected ')'"; a bad term is named as --where names it.
func ParseSelect(src string) (*Select, error) {
	if len(src) > MaxSelectLength {
		return nil, selectError(src, 0, "the expression is %d bytes long, the limit is %d (MaxSelectLength)", len(src), MaxSelectLength)
	}
	if !utf8.ValidString(src) {
		return nil, selectError(src, 0, "the expression is not valid UTF-8")
	}
	p := &selectParser{src: src}
	p.skipSpace()
	if p.pos == len(src) {
		return nil, selectError(src, p.pos, "empty expression: expected a term such as os=debian")
	}
	root, err := p.parseOr(0)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos < len(src) {
		if src[p.pos] == ')' {
			return nil, selectError(src, p.pos, "')' without a matching '('")
		}
		return nil, selectError(src, p.pos, "expected 'and', 'or' or the end, got %s%s", p.near(), keywordHint(src[p.pos:]))
	}
	s := &Select{Root: root}
	if s.eval, err = compileSelect(root); err != nil {
		return nil, err
	}
	return s, nil
}

// Match reports whether a host with these facts is selected; terms match
// exactly as --where terms do. A nil Select matches everything.
func (s *Select) Match(facts map[string]any) bool {
	return s == nil || s.eval.match(facts)
}

// String writes the expression in its canonical form, which ParseSelect
// reads back to the same tree: single spaces, parentheses only where
// precedence needs them, values quoted only where needed.
func (s *Select) String() string {
	if s == nil {
		return ""
	}
	var b strings.Builder
	s.Root.write(&b)
	return b.String()
}

// Terms returns every term of the expression, in order.
func (s *Select) Terms() []FilterTerm {
	if s == nil {
		return nil
	}
	var out []FilterTerm
	var walk func(n *SelectNode)
	walk = func(n *SelectNode) {
		if n.Term != nil {
			out = append(out, *n.Term)
		}
		for i := range n.Nodes {
			walk(&n.Nodes[i])
		}
	}
	walk(&s.Root)
	return out
}

func (e *selectEval) match(facts map[string]any) bool {
	switch e.op {
	case SelectTerm:
		return e.term.match(facts)
	case SelectNot:
		return !e.kids[0].match(facts)
	case SelectAnd:
		for i := range e.kids {
			if !e.kids[i].match(facts) {
				return false
			}
		}
		return true
	case SelectOr:
		for i := range e.kids {
			if e.kids[i].match(facts) {
				return true
			}
		}
	}
	return false
}

// compileSelect compiles a tree's terms (the parser checked them already;
// this also serves trees built by hand).
func compileSelect(n SelectNode) (selectEval, error) {
	e := selectEval{op: n.Op}
	switch n.Op {
	case SelectTerm:
		if n.Term == nil {
			return e, &Error{Code: CodeBadRequest, Message: "a term node without a term", cause: ErrSelect}
		}
		ct, err := compileTerm(*n.Term)
		if err != nil {
			return e, err
		}
		e.term = &ct
		return e, nil
	case SelectNot, SelectAnd, SelectOr:
	default:
		return e, &Error{Code: CodeBadRequest, Message: fmt.Sprintf("unknown operator %q", n.Op), cause: ErrSelect}
	}
	if (n.Op == SelectNot) != (len(n.Nodes) == 1) || len(n.Nodes) == 0 {
		return e, &Error{Code: CodeBadRequest, Message: fmt.Sprintf("%q with %d operands", n.Op, len(n.Nodes)), cause: ErrSelect}
	}
	e.kids = make([]selectEval, len(n.Nodes))
	for i, k := range n.Nodes {
		var err error
		if e.kids[i], err = compileSelect(k); err != nil {
			return e, err
		}
	}
	return e, nil
}

// selectError is a bad request about the expression at byte offset pos,
// reported as a 1-based character position.
func selectError(src string, pos int, format string, args ...any) *Error {
	col := utf8.RuneCountInString(src[:pos]) + 1
	return &Error{Code: CodeBadRequest, Message: fmt.Sprintf("at %d: ", col) + fmt.Sprintf(format, args...), cause: ErrSelect}
}

type selectParser struct {
	src   string
	pos   int
	terms int
}

func isSelectSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\v' || b == '\f'
}

func (p *selectParser) skipSpace() {
	for p.pos < len(p.src) && isSelectSpace(p.src[p.pos]) {
		p.pos++
	}
}

// near names what is at the current position, for an error.
func (p *selectParser) near() string {
	if p.pos >= len(p.src) {
		return "the end"
	}
	rest := p.src[p.pos:]
	if i := strings.IndexFunc(rest, func(r rune) bool { return r < 128 && isSelectSpace(byte(r)) }); i > 0 {
		rest = rest[:i]
	}
	return fmt.Sprintf("%.40q", rest)
}

// keyword consumes kw when it stands alone at the current position (after
// whitespace): followed by whitespace, '(' or the end.
func (p *selectParser) keyword(kw string) bool {
	save := p.pos
	p.skipSpace()
	if strings.HasPrefix(p.src[p.pos:], kw) {
		end := p.pos + len(kw)
		if end == len(p.src) || isSelectSpace(p.src[end]) || p.src[end] == '(' {
			p.pos = end
			return true
		}
	}
	p.pos = save
	return false
}

func (p *selectParser) parseOr(depth int) (SelectNode, error) {
	return p.parseList(depth, SelectOr, p.parseAnd)
}

func (p *selectParser) parseAnd(depth int) (SelectNode, error) {
	return p.parseList(depth, SelectAnd, p.parseNot)
}

// parseList parses operands joined by the keyword op, flattening operands
// that are themselves op lists (from parentheses).
func (p *selectParser) parseList(depth int, op string, operand func(int) (SelectNode, error)) (SelectNode, error) {
	first, err := operand(depth)
	if err != nil {
		return first, err
	}
	if !p.keyword(op) {
		return first, nil
	}
	n := SelectNode{Op: op}
	n.Nodes = appendFlat(n.Nodes, op, first)
	for {
		next, err := operand(depth)
		if err != nil {
			return n, err
		}
		n.Nodes = appendFlat(n.Nodes, op, next)
		if !p.keyword(op) {
			return n, nil
		}
	}
}

func appendFlat(nodes []SelectNode, op string, n SelectNode) []SelectNode {
	if n.Op == op {
		return append(nodes, n.Nodes...)
	}
	return append(nodes, n)
}

func (p *selectParser) parseNot(depth int) (SelectNode, error) {
	p.skipSpace()
	start := p.pos
	if !p.keyword(SelectNot) {
		return p.parsePrimary(depth)
	}
	if depth+1 > MaxSelectDepth {
		return SelectNode{}, selectError(p.src, start, "nested deeper than %d (MaxSelectDepth)", MaxSelectDepth)
	}
	inner, err := p.parseNot(depth + 1)
	if err != nil {
		return inner, err
	}
	return SelectNode{Op: SelectNot, Nodes: []SelectNode{inner}}, nil
}

func (p *selectParser) parsePrimary(depth int) (SelectNode, error) {
	p.skipSpace()
	if p.pos < len(p.src) && p.src[p.pos] == '(' {
		open := p.pos
		if depth+1 > MaxSelectDepth {
			return SelectNode{}, selectError(p.src, open, "nested deeper than %d (MaxSelectDepth)", MaxSelectDepth)
		}
		p.pos++
		inner, err := p.parseOr(depth + 1)
		if err != nil {
			return inner, err
		}
		p.skipSpace()
		if p.pos >= len(p.src) || p.src[p.pos] != ')' {
			return inner, selectError(p.src, p.pos, "expected ')' to close the '(' at %d, got %s", utf8.RuneCountInString(p.src[:open])+1, p.near())
		}
		p.pos++
		return inner, nil
	}
	return p.parseTerm()
}

// parseTerm reads key op value and checks it as a --where term.
func (p *selectParser) parseTerm() (SelectNode, error) {
	start := p.pos
	for p.pos < len(p.src) && factKeyByte(p.src[p.pos]) {
		p.pos++
	}
	key := p.src[start:p.pos]
	if key == "" {
		switch {
		case p.pos >= len(p.src):
			return SelectNode{}, selectError(p.src, p.pos, "expected a term, '(' or 'not', got the end")
		case p.src[p.pos] == ')':
			return SelectNode{}, selectError(p.src, p.pos, "expected a term, '(' or 'not' before ')'")
		}
		return SelectNode{}, selectError(p.src, p.pos, "expected a term such as os=debian, '(' or 'not', got %s", p.near())
	}
	op := p.operator()
	if op == "" {
		save := p.pos
		p.skipSpace()
		if p.pos > save && p.operator() != "" {
			return SelectNode{}, selectError(p.src, save, "no spaces around a term's operator: write %s%s... (quote a value that holds spaces)", key, p.operator())
		}
		return SelectNode{}, selectError(p.src, p.pos, "expected an operator (=, !=, =~, !~, <, <=, >, >=) after %q, got %s%s", key, p.near(), keywordHint(key))
	}
	p.pos += len(op)
	valueAt := p.pos
	value, err := p.parseValue(op)
	if err != nil {
		return SelectNode{}, err
	}
	p.terms++
	if p.terms > MaxSelectTerms {
		return SelectNode{}, selectError(p.src, start, "more than %d terms (MaxSelectTerms)", MaxSelectTerms)
	}
	t := FilterTerm{Key: key, Op: op, Value: value}
	if _, err := compileTerm(t); err != nil {
		return SelectNode{}, selectError(p.src, valueAt, "%s", AsError(err).Message)
	}
	return SelectNode{Op: SelectTerm, Term: &t}, nil
}

// keywordHint is a hint when s starts with a keyword not in lower case.
func keywordHint(s string) string {
	word := s
	if i := strings.IndexFunc(s, func(r rune) bool { return r < 128 && (isSelectSpace(byte(r)) || r == '(') }); i >= 0 {
		word = s[:i]
	}
	switch strings.ToLower(word) {
	case SelectAnd, SelectOr, SelectNot:
		return " (the keywords are lower case: and, or, not)"
	}
	return ""
}

// operator is the term operator at the current position, "" for none.
func (p *selectParser) operator() string {
	for _, o := range operators {
		if strings.HasPrefix(p.src[p.pos:], o) {
			return o
		}
	}
	return ""
}

// parseValue reads a quoted or bare value.
func (p *selectParser) parseValue(op string) (string, error) {
	at := p.pos
	if p.pos >= len(p.src) {
		return "", selectError(p.src, p.pos, "expected a value right after %q (write \"\" for an empty one)", op)
	}
	var value string
	switch q := p.src[p.pos]; q {
	case '"', '\'':
		var b strings.Builder
		p.pos++
		for {
			if p.pos >= len(p.src) {
				return "", selectError(p.src, at, "unterminated quoted value: expected a closing %c", q)
			}
			c := p.src[p.pos]
			p.pos++
			if c == q {
				break
			}
			if q == '"' && c == '\\' && p.pos < len(p.src) && (p.src[p.pos] == '"' || p.src[p.pos] == '\\') {
				c = p.src[p.pos]
				p.pos++
			}
			b.WriteByte(c)
		}
		if p.pos < len(p.src) && !isSelectSpace(p.src[p.pos]) && p.src[p.pos] != ')' {
			return "", selectError(p.src, p.pos, "expected whitespace, ')' or the end after the quoted value, got %s", p.near())
		}
		return b.String(), nil
	}
	value = p.src[p.pos:]
	n := bareLength(value)
	value, p.pos = value[:n], p.pos+n
	if value == "" {
		return "", selectError(p.src, at, "expected a value right after %q (write \"\" for an empty one)", op)
	}
	if op == OpEqual && value[0] == '=' {
		return "", selectError(p.src, at-1, "use = for equality, not ==")
	}
	return value, nil
}

// bareLength is how much of s a bare value takes: up to whitespace or a
// ')' that closes no '(' of the value.
func bareLength(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case isSelectSpace(c):
			return i
		case c == '(':
			depth++
		case c == ')':
			if depth == 0 {
				return i
			}
			depth--
		}
	}
	return len(s)
}

// bareSafe reports whether v reads back as itself written bare: not
// empty, not starting with a quote or with a character that would join
// the operator (= ~), no whitespace, and its parentheses balanced (so that
// it neither ends early nor takes a group's ')').
func bareSafe(v string) bool {
	if v == "" || strings.ContainsRune("\"'=~", rune(v[0])) {
		return false
	}
	depth := 0
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case isSelectSpace(c):
			return false
		case c == '(':
			depth++
		case c == ')':
			if depth == 0 {
				return false
			}
			depth--
		}
	}
	return depth == 0
}

// precedence of a node's operator, higher binding tighter.
func precedence(op string) int {
	switch op {
	case SelectOr:
		return 1
	case SelectAnd:
		return 2
	case SelectNot:
		return 3
	}
	return 4
}

func (n *SelectNode) write(b *strings.Builder) {
	switch n.Op {
	case SelectTerm:
		if n.Term != nil {
			writeSelectTerm(b, *n.Term)
		}
	case SelectNot:
		b.WriteString("not ")
		for i := range n.Nodes {
			n.Nodes[i].writeOperand(b, SelectNot)
		}
	default:
		for i := range n.Nodes {
			if i > 0 {
				b.WriteString(" " + n.Op + " ")
			}
			n.Nodes[i].writeOperand(b, n.Op)
		}
	}
}

// writeOperand writes n under parent, in parentheses when n binds less
// tightly (or is the same list operator, which a parsed tree never has).
func (n *SelectNode) writeOperand(b *strings.Builder, parent string) {
	if p := precedence(n.Op); p < precedence(parent) || (p == precedence(parent) && n.Op != SelectNot) {
		b.WriteByte('(')
		n.write(b)
		b.WriteByte(')')
		return
	}
	n.write(b)
}

func writeSelectTerm(b *strings.Builder, t FilterTerm) {
	b.WriteString(t.Key)
	b.WriteString(t.Op)
	v := t.Value
	if bareSafe(v) {
		b.WriteString(v)
		return
	}
	b.WriteByte('"')
	for i := 0; i < len(v); i++ {
		if v[i] == '"' || v[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(v[i])
	}
	b.WriteByte('"')
}
