package protocol

import (
	"cmp"
	"encoding/json"
	"reflect"
	"strconv"
)

// Matching rules, shared by the orchestrator (against the registry) and the
// agent (against its own facts):
//
//   - A key is first looked up as one flat fact ("a.b" as a top-level name),
//     then walked through nested maps and lists segment by segment, a list
//     taking a decimal index. A missing or null fact matches none of =, =~,
//     <, <=, >, >= and so matches != and !~, the negations of = and =~.
//   - = and != and the regular expressions compare the fact's text: strings
//     as they are, numbers in their shortest decimal form (4, 1.5), booleans
//     as true/false. Maps and lists have no text and never equal anything.
//   - Ordering: a numeric fact is compared numerically with a numeric
//     value. A string fact is compared as a version when both sides look
//     like versions (a digit first, optionally after "v"; then letters,
//     digits and . - _ + ~ :), so 1.10 > 1.9 and 12.4 >= 12; otherwise
//     numerically when both are decimal numbers (-3, 1e3). A fact that is
//     neither (a word, a bool, a map) does not match.
//   - Versions compare run by run: runs of digits numerically, runs of
//     letters lexically, a digit run after a letter run; when all shared runs
//     are equal the one with more runs is greater (12.0 > 12).

func (c *compiledFilter) match(facts map[string]any) bool {
	if len(c.hostIDs) > 0 || len(c.hostREs) > 0 {
		id, _ := facts["identity"].(string)
		if !c.matchHost(id) {
			return false
		}
	}
	for i := range c.where {
		if !c.where[i].match(facts) {
			return false
		}
	}
	return c.sel.Match(facts)
}

func (c *compiledFilter) matchHost(id string) bool {
	if id == "" {
		return false
	}
	if _, ok := c.hostIDs[id]; ok {
		return true
	}
	for _, re := range c.hostREs {
		if re.MatchString(id) {
			return true
		}
	}
	return false
}

func (t *compiledTerm) match(facts map[string]any) bool {
	v, found := lookupFact(facts, t.Key, t.path)
	switch t.Op {
	case OpEqual, OpNotEqual:
		s, ok := factText(v)
		eq := found && ok && s == t.Value
		return eq == (t.Op == OpEqual)
	case OpMatch, OpNotMatch:
		s, ok := factText(v)
		m := found && ok && t.re.MatchString(s)
		return m == (t.Op == OpMatch)
	}
	if !found {
		return false
	}
	c, ok := compareFact(v, &t.lit)
	if !ok {
		return false
	}
	switch t.Op {
	case OpLess:
		return c < 0
	case OpLessEqual:
		return c <= 0
	case OpGreater:
		return c > 0
	case OpGreaterEqual:
		return c >= 0
	}
	return false
}

// lookupFact finds key in facts: as a flat name first, then along path.
func lookupFact(facts map[string]any, key string, path []string) (any, bool) {
	if v, ok := facts[key]; ok && v != nil {
		return v, true
	}
	if len(path) == 1 {
		return nil, false
	}
	var cur any = facts
	for _, seg := range path {
		next, ok := child(cur, seg)
		if !ok {
			return nil, false
		}
		cur = next
	}
	return cur, cur != nil
}

// child steps one segment into a map (by key) or a list (by index).
func child(v any, seg string) (any, bool) {
	switch c := v.(type) {
	case map[string]any:
		n, ok := c[seg]
		return n, ok
	case map[string]string:
		n, ok := c[seg]
		return n, ok
	case []any:
		if i, ok := listIndex(seg, len(c)); ok {
			return c[i], true
		}
		return nil, false
	case []string:
		if i, ok := listIndex(seg, len(c)); ok {
			return c[i], true
		}
		return nil, false
	case nil:
		return nil, false
	}
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface {
		if rv.IsNil() {
			return nil, false
		}
		rv = rv.Elem()
	}
	switch rv.Kind() {
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return nil, false
		}
		n := rv.MapIndex(reflect.ValueOf(seg).Convert(rv.Type().Key()))
		if !n.IsValid() {
			return nil, false
		}
		return n.Interface(), true
	case reflect.Slice, reflect.Array:
		if i, ok := listIndex(seg, rv.Len()); ok {
			return rv.Index(i).Interface(), true
		}
	}
	return nil, false
}

func listIndex(seg string, n int) (int, bool) {
	if seg == "" || len(seg) > 9 {
		return 0, false
	}
	for i := 0; i < len(seg); i++ {
		if seg[i] < '0' || seg[i] > '9' {
			return 0, false
		}
	}
	i, err := strconv.Atoi(seg)
	return i, err == nil && i < n
}

// factText is the text of a scalar fact for =, != and the regexes.
func factText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case json.Number:
		return x.String(), true
	}
	if f, ok := numericFact(v); ok {
		return formatNumber(v, f), true
	}
	return "", false
}

// numericFact converts a fact of any Go number type (or a json.Number) to float64.
func numericFact(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case int16:
		return float64(x), true
	case int8:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint64:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint16:
		return float64(x), true
	case uint8:
		return float64(x), true
	case json.Number:
		return parseNumber(x.String())
	}
	return 0, false
}

// formatNumber writes integers exactly and floats in their shortest form.
func formatNumber(v any, f float64) string {
	switch x := v.(type) {
	case int:
		return strconv.FormatInt(int64(x), 10)
	case int64:
		return strconv.FormatInt(x, 10)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int16:
		return strconv.FormatInt(int64(x), 10)
	case int8:
		return strconv.FormatInt(int64(x), 10)
	case uint:
		return strconv.FormatUint(uint64(x), 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case uint32:
		return strconv.FormatUint(uint64(x), 10)
	case uint16:
		return strconv.FormatUint(uint64(x), 10)
	case uint8:
		return strconv.FormatUint(uint64(x), 10)
	case float32:
		return strconv.FormatFloat(f, 'f', -1, 32)
	case json.Number:
		return x.String()
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// orderLiteral is the value of an ordering term, classified once at parse.
type orderLiteral struct {
	raw     string
	num     float64
	isNum   bool
	version bool
}

func parseOrderLiteral(s string) (orderLiteral, bool) {
	lit := orderLiteral{raw: s, version: looksLikeVersion(s)}
	lit.num, lit.isNum = parseNumber(s)
	return lit, lit.isNum || lit.version
}

// compareFact orders a fact against a literal; false when they do not compare.
func compareFact(v any, lit *orderLiteral) (int, bool) {
	if f, ok := numericFact(v); ok {
		if lit.isNum {
			return cmp.Compare(f, lit.num), true
		}
		if s := formatNumber(v, f); lit.version && looksLikeVersion(s) {
			return compareVersions(s, lit.raw), true
		}
		return 0, false
	}
	s, ok := v.(string)
	if !ok {
		return 0, false
	}
	if lit.version && looksLikeVersion(s) {
		return compareVersions(s, lit.raw), true
	}
	if f, ok := parseNumber(s); ok && lit.isNum {
		return cmp.Compare(f, lit.num), true
	}
	return 0, false
}

// parseNumber accepts plain decimal notation only: an optional sign, digits
// with an optional fraction, an optional exponent. No hex, inf, nan or "_".
func parseNumber(s string) (float64, bool) {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for ; i < len(s) && isDigit(s[i]); i++ {
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for ; i < len(s) && isDigit(s[i]); i++ {
			digits++
		}
	}
	if digits == 0 {
		return 0, false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		exp := 0
		for ; i < len(s) && isDigit(s[i]); i++ {
			exp++
		}
		if exp == 0 {
			return 0, false
		}
	}
	if i != len(s) {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}
