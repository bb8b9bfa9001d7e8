package protocol_test

import (
	"encoding/json"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

// selects parses an expression that must parse and matches it.
func selects(expr string, facts map[string]any) bool {
	GinkgoHelper()
	s, err := protocol.ParseSelect(expr)
	Expect(err).ToNot(HaveOccurred(), expr)
	return s.Match(facts)
}

var _ = Describe("ParseSelect", func() {
	web := map[string]any{"identity": "web1", "os": "debian", "role": "web", "env": "dev", "cpus": float64(4), "motd": "hello world", "not": "x"}
	db := map[string]any{"identity": "db1", "os": "rhel", "role": "db", "env": "prod", "cpus": float64(16)}
	webRH := map[string]any{"identity": "web2", "os": "rhel", "role": "web", "env": "dev", "cpus": float64(2)}

	DescribeTable("selects by and, or, not and parentheses",
		func(expr string, wantWeb, wantDB, wantWebRH bool) {
			Expect([]bool{selects(expr, web), selects(expr, db), selects(expr, webRH)}).To(Equal([]bool{wantWeb, wantDB, wantWebRH}), expr)
		},
		Entry("one term", "os=debian", true, false, false),
		Entry("and", "os=rhel and role=web", false, false, true),
		Entry("or", "role=db or os=debian", true, true, false),
		Entry("the issue's example", "(os=debian and role=web) or env=prod", true, true, false),
		Entry("and binds tighter than or", "os=debian and role=web or env=prod", true, true, false),
		Entry("and binds tighter than or, the other side", "env=prod or os=debian and role=web", true, true, false),
		Entry("parentheses override", "os=debian and (role=web or env=prod)", true, false, false),
		Entry("not binds tighter than and", "not os=debian and role=web", false, false, true),
		Entry("not of a group", "not (os=debian and role=web)", false, true, true),
		Entry("not not", "not not role=db", false, true, false),
		Entry("not before a parenthesis without a space", "not(role=db)", true, false, true),
		Entry("all the operators", "cpus>=4 and cpus<16 or cpus>15 and cpus<=16 or os!=rhel and os!~^r", true, true, false),
		Entry("a regex with parentheses needs no quotes", "os=~^(debian|ubuntu)$", true, false, false),
		Entry("the same inside a group", "(os=~^(debian|ubuntu)$ or role=db)", true, true, false),
		Entry("a quoted value with a space", `motd="hello world"`, true, false, false),
		Entry("a single-quoted value", `motd='hello world'`, true, false, false),
		Entry("a quoted regex keeps its backslashes", `motd=~"^hello\sw"`, true, false, false),
		Entry("a fact named like a keyword", "not=x", true, false, false),
		Entry("a missing fact matches the negations", "rack!=a and not rack=a", true, true, true),
		Entry("nested lists", "((role=web) and ((os=rhel)))", false, false, true),
	)

	It("matches terms exactly as --where does, nested facts included", func() {
		facts := hostFacts()
		for _, term := range []string{"host.info.platformFamily=debian", "disks.0.size_gb>=100", "ruby>1.9", "go>=v1.22", "roles.1=db", "virtual=true", "nothing!=x", "a.b=flat"} {
			Expect(selects(term, facts)).To(Equal(matches(term, facts)), term)
			Expect(selects("not "+term, facts)).To(Equal(!matches(term, facts)), term)
		}
	})

	DescribeTable("prints the canonical form, which reads back to the same tree",
		func(expr, canonical string) {
			s, err := protocol.ParseSelect(expr)
			Expect(err).ToNot(HaveOccurred())
			Expect(s.String()).To(Equal(canonical))
			back, err := protocol.ParseSelect(s.String())
			Expect(err).ToNot(HaveOccurred())
			Expect(back.Root).To(Equal(s.Root))
		},
		Entry(nil, "  (os=debian   and role=web)or env=prod ", "os=debian and role=web or env=prod"),
		Entry(nil, "os=debian and (role=web or env=prod)", "os=debian and (role=web or env=prod)"),
		Entry(nil, "a=1 or (b=2 or c=3)", "a=1 or b=2 or c=3"),
		Entry(nil, "not (a=1 and b=2)", "not (a=1 and b=2)"),
		Entry(nil, "not not a=1", "not not a=1"),
		Entry(nil, `m="a \"b\" \\c"`, `m="a \"b\" \\c"`),
		Entry(nil, `m='x y'`, `m="x y"`),
		Entry(nil, `m=""`, `m=""`),
		Entry(nil, `m!="=x"`, `m!="=x"`),
		Entry(nil, `m="(x"`, `m="(x"`),
		Entry(nil, `(m="x)")`, `m="x)"`),
		Entry(nil, "os=~^(a|b)$", "os=~^(a|b)$"),
	)

	It("keeps and and or as flat lists in the tree", func() {
		s, err := protocol.ParseSelect("(a=1 and b=2) and c=3 or d=4")
		Expect(err).ToNot(HaveOccurred())
		Expect(s.Root.Op).To(Equal(protocol.SelectOr))
		Expect(s.Root.Nodes).To(HaveLen(2))
		Expect(s.Root.Nodes[0].Op).To(Equal(protocol.SelectAnd))
		Expect(s.Root.Nodes[0].Nodes).To(HaveLen(3))
		Expect(s.Terms()).To(Equal([]protocol.FilterTerm{{Key: "a", Op: "=", Value: "1"}, {Key: "b", Op: "=", Value: "2"}, {Key: "c", Op: "=", Value: "3"}, {Key: "d", Op: "=", Value: "4"}}))
	})

	DescribeTable("refuses bad input, naming the position",
		func(expr, message string) {
			_, err := protocol.ParseSelect(expr)
			Expect(err).To(MatchError(protocol.ErrBadRequest))
			Expect(err).To(MatchError(protocol.ErrSelect))
			Expect(protocol.AsError(err).Message).To(Equal(message))
		},
		Entry("empty", "", "at 1: empty expression: expected a term such as os=debian"),
		Entry("blank", "   ", "at 4: empty expression: expected a term such as os=debian"),
		Entry("an unclosed parenthesis", "(os=debian and role=web", "at 24: expected ')' to close the '(' at 1, got the end"),
		Entry("an unclosed parenthesis before more", "(os=debian or (role=web) x", "at 26: expected ')' to close the '(' at 1, got \"x\""),
		Entry("a stray parenthesis", "os=debian)", "at 10: ')' without a matching '('"),
		Entry("an empty group", "()", "at 2: expected a term, '(' or 'not' before ')'"),
		Entry("a dangling and", "os=debian and", "at 14: expected a term, '(' or 'not', got the end"),
		Entry("two terms without a keyword", "os=debian role=web", "at 11: expected 'and', 'or' or the end, got \"role=web\""),
		Entry("upper-case keyword", "os=debian AND role=web", "at 11: expected 'and', 'or' or the end, got \"AND\" (the keywords are lower case: and, or, not)"),
		Entry("upper-case keyword first", "NOT os=debian", "at 5: expected an operator (=, !=, =~, !~, <, <=, >, >=) after \"NOT\", got \"os=debian\" (the keywords are lower case: and, or, not)"),
		Entry("no operator", "os", "at 3: expected an operator (=, !=, =~, !~, <, <=, >, >=) after \"os\", got the end"),
		Entry("no value", "os= and role=web", "at 4: expected a value right after \"=\" (write \"\" for an empty one)"),
		Entry("no value at the end", "(os=", "at 5: expected a value right after \"=\" (write \"\" for an empty one)"),
		Entry("spaces around the operator", "role = web", "at 5: no spaces around a term's operator: write role=... (quote a value that holds spaces)"),
		Entry("a space after the operator", "role= web", "at 6: expected a value right after \"=\" (write \"\" for an empty one)"),
		Entry("==", "os==debian", "at 3: use = for equality, not =="),
		Entry("an unterminated quote", `motd="hello`, "at 6: unterminated quoted value: expected a closing \""),
		Entry("text after a quote", `motd="a"b`, "at 9: expected whitespace, ')' or the end after the quoted value, got \"b\""),
		Entry("a bad regex", "os=~[", "at 5: filter \"os=~[\": invalid regular expression: missing closing ]: `[`"),
		Entry("an ordering without a number", "cpus>many", "at 6: filter \"cpus>many\": > needs a number or a version, got \"many\""),
		Entry("a bad fact name", "(o$=x)", "at 3: expected an operator (=, !=, =~, !~, <, <=, >, >=) after \"o\", got \"$=x)\""),
		Entry("a bad character", "&& os=x", "at 1: expected a term such as os=debian, '(' or 'not', got \"&&\""),
		Entry("too long", "a="+strings.Repeat("x", protocol.MaxSelectLength), "at 1: the expression is 4098 bytes long, the limit is 4096 (MaxSelectLength)"),
		Entry("too deep", strings.Repeat("(", 33)+"a=1"+strings.Repeat(")", 33), "at 33: nested deeper than 32 (MaxSelectDepth)"),
		Entry("too deep with not", strings.Repeat("not ", 33)+"a=1", "at 129: nested deeper than 32 (MaxSelectDepth)"),
		Entry("too many terms", strings.Repeat("a=1 or ", 64)+"a=1", "at 449: more than 64 terms (MaxSelectTerms)"),
		Entry("invalid UTF-8", "a=\xff", "at 1: the expression is not valid UTF-8"),
		Entry("positions count characters", "é=1 and (", "at 1: expected a term such as os=debian, '(' or 'not', got \"é=1\""),
		Entry("positions count characters after one", "os=é and (", "at 11: expected a term, '(' or 'not', got the end"),
	)

	It("accepts the limits themselves", func() {
		_, err := protocol.ParseSelect(strings.Repeat("(", 32) + "a=1" + strings.Repeat(")", 32))
		Expect(err).ToNot(HaveOccurred())
		_, err = protocol.ParseSelect(strings.Repeat("a=1 or ", 63) + "a=1")
		Expect(err).ToNot(HaveOccurred())
	})
})

var _ = Describe("Filter with a select expression", func() {
	It("ANDs the select with the where terms and travels as its canonical text", func() {
		f, err := protocol.NewFilterSelect([]string{"env=dev"}, nil, "(os=debian  and role=web) or role=db")
		Expect(err).ToNot(HaveOccurred())
		Expect(f.Select).To(Equal("os=debian and role=web or role=db"))
		Expect(f.Match(map[string]any{"os": "debian", "role": "web", "env": "dev"})).To(BeTrue())
		Expect(f.Match(map[string]any{"os": "debian", "role": "web", "env": "prod"})).To(BeFalse())
		Expect(f.Match(map[string]any{"os": "rhel", "role": "db", "env": "dev"})).To(BeTrue())
		Expect(f.Match(map[string]any{"os": "rhel", "role": "web", "env": "dev"})).To(BeFalse())
		Expect(f.Empty()).To(BeFalse())
		Expect(f.Equalities()).To(Equal([]protocol.FilterTerm{{Key: "env", Op: "=", Value: "dev"}}))
		Expect(f.Terms()).To(HaveLen(4))

		b, err := json.Marshal(f)
		Expect(err).ToNot(HaveOccurred())
		Expect(string(b)).To(Equal(`{"where":[{"key":"env","op":"=","value":"dev"}],"select":"os=debian and role=web or role=db"}`))
	})

	It("is the only filter part a select-only filter has", func() {
		f, err := protocol.NewFilterSelect(nil, nil, "not role=db")
		Expect(err).ToNot(HaveOccurred())
		Expect(f.Empty()).To(BeFalse())
		Expect(f.Match(map[string]any{"role": "db"})).To(BeFalse())
		Expect(f.Match(map[string]any{"role": "web"})).To(BeTrue())
	})

	It("leaves a filter without a select as it was on the wire", func() {
		f, err := protocol.NewFilterSelect([]string{"os=debian"}, nil, "")
		Expect(err).ToNot(HaveOccurred())
		b, err := json.Marshal(f)
		Expect(err).ToNot(HaveOccurred())
		Expect(string(b)).To(Equal(`{"where":[{"key":"os","op":"=","value":"debian"}]}`))
	})

	It("refuses a received request whose select does not parse, naming the field", func() {
		_, err := protocol.DecodeFleetRequest([]byte(fleetWith(`"filter":{"select":"(os=debian"},`+fleetEnsure)), protocol.Limits{})
		pe := badRequestAt(err, "filter.select")
		Expect(err).To(MatchError(protocol.ErrSelect))
		Expect(pe.Message).To(ContainSubstring("at 11: expected ')'"))
	})

	It("decodes and judges a received request's select", func() {
		req, err := protocol.DecodeFleetRequest([]byte(fleetWith(`"filter":{"select":"role=web or role=db"},`+fleetEnsure)), protocol.Limits{})
		Expect(err).ToNot(HaveOccurred())
		Expect(req.Filter.Match(map[string]any{"role": "db"})).To(BeTrue())
		Expect(req.Filter.Match(map[string]any{"role": "mail"})).To(BeFalse())
	})

	It("is refused, as an unknown key, by a decoder that predates it", func() {
		// What an agent before select decodes a filter into: where and
		// hosts only, strictly (as every agent decodes requests).
		var old struct {
			Filter *struct {
				Where []protocol.FilterTerm `json:"where"`
				Hosts []string              `json:"hosts"`
			} `json:"filter"`
		}
		err := protocol.DecodeJSONStrict([]byte(`{"filter":{"select":"role=web"}}`), &old)
		Expect(err).To(MatchError(protocol.ErrBadRequest))
		Expect(protocol.AsError(err).UnknownKey()).To(BeTrue())
	})
})
