package protocol

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"
)

// Filter operators, the Op of a FilterTerm.
const (
	// OpEqual: the fact's text equals the value.
	OpEqual = "="
	// OpNotEqual: the fact is missing or its text differs from the value.
	OpNotEqual = "!="
	// OpMatch: the fact's text matches the regular expression (unanchored).
	OpMatch = "=~"
	// OpNotMatch: the fact is missing or its text does not match the regular expression.
	OpNotMatch = "!~"
	// OpLess: the fact orders before the value (numeric or version comparison).
	OpLess = "<"
	// OpLessEqual: the fact orders before or equal to the value.
	OpLessEqual = "<="
	// OpGreater: the fact orders after the value.
	OpGreater = ">"
	// OpGreaterEqual: the fact orders after or equal to the value.
	OpGreaterEqual = ">="
)

// operators in the order a term is scanned: two-character operators first so
// that "k<=1" is not read as "k<" "=1".
var operators = [...]string{OpNotEqual, OpNotMatch, OpMatch, OpLessEqual, OpGreaterEqual, OpEqual, OpLess, OpGreater}

// Filter bounds, applied to parsed and to received filters alike.
const (
	// MaxFilterTerms is the most --where terms, and separately the most
	// --host terms, a filter may hold.
	MaxFilterTerms = 64
	// MaxFilterTermLength is the longest term in bytes (key, operator and
	// value together, or one host term).
	MaxFilterTermLength = 1024
)

// FilterTerm is one parsed --where term, e.g. {os = debian}.
type FilterTerm struct {
	// Key is the fact name; dots reach nested facts and list indexes
	// (host.info.platformFamily, disks.0.name).
	Key string `json:"key"`
	// Op is one of the Op constants.
	Op string `json:"op"`
	// Value is the literal, regular expression, number or version.
	Value string `json:"value"`
}

// String returns the term as it would be written on the command line.
func (t FilterTerm) String() string { return t.Key + t.Op + t.Value }

// Filter selects hosts by their facts: every Where term must match (AND),
// when Hosts is not empty the host's identity must equal one of the
// exact identities or match one of the /regex/ entries (OR among hosts),
// and when Select is set the host must match that compound expression too
// (see ParseSelect). An empty or nil Filter matches every host.
//
// A Filter travels in the fleet request as {"where":[{"key","op","value"}],
// "hosts":[...],"select":"EXPR"}, select omitted when empty so that a
// request without one is what older agents read. An agent that predates
// select decodes filters strictly and so refuses one carrying it
// (bad_request, unknown key): it never runs a request meant for fewer
// hosts. ParseFilter, NewFilter and Compile compile it once; Match
// then uses the compiled form. Call Compile again after changing Where or
// Hosts. A compiled Filter is safe for concurrent Match calls.
type Filter struct {
	Where []FilterTerm `json:"where,omitempty"`
	Hosts []string     `json:"hosts,omitempty"`
	// Select is a select expression (--select), ANDed with the rest.
	Select string `json:"select,omitempty"`

	compiled *compiledFilter
}

type compiledFilter struct {
	where   []compiledTerm
	hostIDs map[string]struct{}
	hostREs []*regexp.Regexp
	sel     *Select
}

type compiledTerm struct {
	FilterTerm
	path []string
	re   *regexp.Regexp
	lit  orderLiteral
}

// ParseFilter parses --where terms (k=v, k!=v, k=~re, k!~re, k<n, k<=n, k>n,
// k>=n) into a compiled Filter. Whitespace around the key and the value is
// ignored. Ordering operators need a number or a version as value. Errors
// wrap ErrBadRequest and quote the offending term.
func ParseFilter(terms []string) (*Filter, error) {
	if len(terms) > MaxFilterTerms {
		return nil, badRequest("filter: %d terms, at most %d are accepted", len(terms), MaxFilterTerms)
	}
	f := &Filter{}
	for _, raw := range terms {
		t, err := parseTerm(raw)
		if err != nil {
			return nil, err
		}
		f.Where = append(f.Where, t)
	}
	if err := f.Compile(); err != nil {
		return nil, err
	}
	return f, nil
}

// ParseHosts checks --host terms: each is an exact identity (see
// ValidateIdentity) or a regular expression between slashes, /^web\d+/.
// It returns the terms with surrounding whitespace removed.
func ParseHosts(hosts []string) ([]string, error) {
	if len(hosts) > MaxFilterTerms {
		return nil, badRequest("hosts: %d terms, at most %d are accepted", len(hosts), MaxFilterTerms)
	}
	out := make([]string, 0, len(hosts))
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		if _, _, err := compileHost(h); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
}

// NewFilter parses --where terms and --host terms into one compiled Filter.
func NewFilter(where, hosts []string) (*Filter, error) {
	f, err := ParseFilter(where)
	if err != nil {
		return nil, err
	}
	if f.Hosts, err = ParseHosts(hosts); err != nil {
		return nil, err
	}
	if len(f.Hosts) == 0 {
		f.Hosts = nil
	}
	return f, f.Compile()
}

// NewFilterSelect is NewFilter with a select expression (--select) ANDed
// to the terms; an empty sel is none. The filter keeps the expression in
// its canonical form (Select.String). A bad expression's error wraps
// ErrBadRequest and ErrSelect and starts with its position.
func NewFilterSelect(where, hosts []string, sel string) (*Filter, error) {
	f, err := NewFilter(where, hosts)
	if err != nil || sel == "" {
		return f, err
	}
	s, err := ParseSelect(sel)
	if err != nil {
		return nil, err
	}
	f.Select = s.String()
	return f, f.Compile()
}

// Terms returns every term of the filter: the Where terms, then those of
// its select expression (nil when it does not compile).
func (f *Filter) Terms() []FilterTerm {
	if f == nil {
		return nil
	}
	out := slices.Clone(f.Where)
	if f.Select != "" {
		s, err := ParseSelect(f.Select)
		if err != nil {
			return nil
		}
		out = append(out, s.Terms()...)
	}
	return out
}

// Compile checks the filter and caches its compiled form for Match. A
// filter received on the wire must be compiled (DecodeFleetRequest does it)
// before it is trusted; errors wrap ErrBadRequest and name the term.
func (f *Filter) Compile() error {
	if f == nil {
		return nil
	}
	c, err := compileFilter(f)
	if err != nil {
		return err
	}
	f.compiled = c
	return nil
}

// Empty reports whether the filter has no terms and so matches every host.
func (f *Filter) Empty() bool {
	return f == nil || (len(f.Where) == 0 && len(f.Hosts) == 0 && f.Select == "")
}

// Equalities returns the k=v Where terms (a select expression's are not
// all required), the candidates for narrowing a request
// to a fact subject (ccm.v1.req.fact.<key>.<value>).
func (f *Filter) Equalities() []FilterTerm {
	if f == nil {
		return nil
	}
	var out []FilterTerm
	for _, t := range f.Where {
		if t.Op == OpEqual {
			out = append(out, t)
		}
	}
	return out
}

// Match reports whether a host with these facts is selected; its identity
// is facts["identity"]. A nil Filter matches everything. A filter that does
// not compile matches nothing.
func (f *Filter) Match(facts map[string]any) bool {
	if f == nil {
		return true
	}
	c := f.compiled
	if c == nil {
		var err error
		if c, err = compileFilter(f); err != nil {
			return false
		}
	}
	return c.match(facts)
}

func compileFilter(f *Filter) (*compiledFilter, error) {
	if len(f.Where) > MaxFilterTerms {
		return nil, badRequest("filter: %d terms, at most %d are accepted", len(f.Where), MaxFilterTerms)
	}
	if len(f.Hosts) > MaxFilterTerms {
		return nil, badRequest("hosts: %d terms, at most %d are accepted", len(f.Hosts), MaxFilterTerms)
	}
	c := &compiledFilter{where: make([]compiledTerm, 0, len(f.Where))}
	for _, t := range f.Where {
		ct, err := compileTerm(t)
		if err != nil {
			return nil, err
		}
		c.where = append(c.where, ct)
	}
	for _, h := range f.Hosts {
		id, re, err := compileHost(h)
		if err != nil {
			return nil, err
		}
		if re != nil {
			c.hostREs = append(c.hostREs, re)
			continue
		}
		if c.hostIDs == nil {
			c.hostIDs = make(map[string]struct{}, len(f.Hosts))
		}
		c.hostIDs[id] = struct{}{}
	}
	if f.Select != "" {
		s, err := ParseSelect(f.Select)
		if err != nil {
			return nil, within("select", err)
		}
		c.sel = s
	}
	return c, nil
}

// parseTerm splits "key<op>value" at the first operator character.
func parseTerm(raw string) (FilterTerm, error) {
	if len(raw) > MaxFilterTermLength {
		return FilterTerm{}, badRequest("filter %q...: longer than %d bytes", raw[:32], MaxFilterTermLength)
	}
	if strings.TrimSpace(raw) == "" {
		return FilterTerm{}, badRequest("filter %q: empty term", raw)
	}
	i := strings.IndexAny(raw, "=!<>~")
	if i < 0 {
		return FilterTerm{}, badRequest("filter %q: expected key=value, key!=value, key=~regex, key!~regex, key<n, key<=n, key>n or key>=n", raw)
	}
	rest := raw[i:]
	for _, op := range operators {
		if strings.HasPrefix(rest, op) {
			value := rest[len(op):]
			if op == OpEqual && strings.HasPrefix(value, "=") {
				return FilterTerm{}, badRequest("filter %q: use = for equality, not ==", raw)
			}
			if joined, sep := joinedTerm(op, value); joined != "" {
				first := raw[:len(raw)-len(joined)-1] // joined is a suffix of raw, after its separator
				return FilterTerm{}, badRequest("filter %q: one condition per --where: write --where %s --where %s (to match a value holding %q, use =~ with a regular expression)",
					raw, strings.TrimSpace(first), strings.TrimSpace(joined), sep+strings.TrimSpace(joined))
			}
			return FilterTerm{Key: strings.TrimSpace(raw[:i]), Op: op, Value: strings.TrimSpace(value)}, nil
		}
	}
	return FilterTerm{}, badRequest("filter %q: unknown operator at %q", raw, rest[:1])
}

// joinedTerm returns the second condition of a value that holds two
// joined by a comma or by white space, as the dashboard's filter box
// writes them (`c=d` of `a=b,c=d` or of `a=b c=d`), and the separator;
// "" when it holds none. Only literal values are read so: a regular
// expression may hold `,name=` for itself.
func joinedTerm(op, value string) (joined, sep string) {
	if op == OpMatch || op == OpNotMatch {
		return "", ""
	}
	for rest := value; ; {
		c := strings.IndexAny(rest, ", \t\n")
		if c < 0 {
			return "", ""
		}
		sep = rest[c : c+1]
		if sep != "," {
			sep = " "
		}
		rest = rest[c+1:]
		j := strings.IndexAny(rest, "=!<>~")
		key := strings.TrimSpace(rest[:max(j, 0)])
		if j > 0 && key != "" && strings.IndexFunc(key, func(r rune) bool { return r > 127 || !factKeyByte(byte(r)) }) < 0 {
			return rest, sep
		}
	}
}

func compileTerm(t FilterTerm) (compiledTerm, error) {
	if n := len(t.Key) + len(t.Op) + len(t.Value); n > MaxFilterTermLength {
		return compiledTerm{}, badRequest("filter %q...: longer than %d bytes", t.String()[:32], MaxFilterTermLength)
	}
	path, err := factPath(t.Key)
	if err != nil {
		return compiledTerm{}, badRequest("filter %q: %s", t.String(), err)
	}
	// JSON carries each invalid byte as U+FFFD: the agents would judge
	// another value than the one given, and a longer one.
	if !utf8.ValidString(t.Value) {
		return compiledTerm{}, badRequest("filter %q: value is not valid UTF-8", t.String())
	}
	ct := compiledTerm{FilterTerm: t, path: path}
	switch t.Op {
	case OpEqual, OpNotEqual:
	case OpMatch, OpNotMatch:
		re, err := regexp.Compile(t.Value)
		if err != nil {
			return compiledTerm{}, badRequest("filter %q: invalid regular expression: %s", t.String(), regexpProblem(err))
		}
		ct.re = re
	case OpLess, OpLessEqual, OpGreater, OpGreaterEqual:
		lit, ok := parseOrderLiteral(t.Value)
		if !ok {
			return compiledTerm{}, badRequest("filter %q: %s needs a number or a version, got %q", t.String(), t.Op, t.Value)
		}
		ct.lit = lit
	default:
		return compiledTerm{}, badRequest("filter %q: unknown operator %q", t.String(), t.Op)
	}
	return ct, nil
}

// factPath checks a fact name and splits it at its dots.
func factPath(key string) ([]string, error) {
	if key == "" {
		return nil, errors.New("missing fact name before the operator")
	}
	for i := 0; i < len(key); i++ {
		if !factKeyByte(key[i]) {
			return nil, fmt.Errorf("fact name %q may only contain letters, digits, '_', '-' and '.'", key)
		}
	}
	path := strings.Split(key, ".")
	for _, seg := range path {
		if seg == "" {
			return nil, fmt.Errorf("fact name %q has an empty segment", key)
		}
	}
	return path, nil
}

// CheckFactKey checks a fact name as a filter term's key: letters,
// digits, '_', '-' and '.', dots separating the segments of a path into
// nested facts. Errors wrap ErrBadRequest.
func CheckFactKey(key string) error {
	if _, err := factPath(key); err != nil {
		return badRequest("%s", err)
	}
	return nil
}

// LookupFact finds key in facts the way a filter term does: as a flat name
// first, then as a dotted path into nested maps and lists
// ("host.info.platformFamily", "disks.0.name").
func LookupFact(facts map[string]any, key string) (any, bool) {
	return lookupFact(facts, key, strings.Split(key, "."))
}

func factKeyByte(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '_' || b == '-' || b == '.'
}

// compileHost checks one --host term: a /regex/ returns the compiled
// expression, anything else must be a valid identity and is returned as is.
func compileHost(h string) (string, *regexp.Regexp, error) {
	if len(h) > MaxFilterTermLength {
		return "", nil, badRequest("host %q...: longer than %d bytes", h[:32], MaxFilterTermLength)
	}
	if len(h) >= 2 && h[0] == '/' && h[len(h)-1] == '/' {
		body := h[1 : len(h)-1]
		if body == "" {
			return "", nil, badRequest("host %q: empty regular expression", h)
		}
		re, err := regexp.Compile(body)
		if err != nil {
			return "", nil, badRequest("host %q: invalid regular expression: %s", h, regexpProblem(err))
		}
		return "", re, nil
	}
	if problem := identityProblem(h); problem != "" {
		return "", nil, badRequest("host %q: %s (use /regex/ for a pattern)", h, problem)
	}
	return h, nil, nil
}

func regexpProblem(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return string(se.Code) + ": `" + se.Expr + "`"
	}
	return err.Error()
}
