package protocol_test

import (
	"encoding/json"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

// hostFacts are facts as an agent's registry entry carries them after a
// JSON round trip: numbers are float64, nested maps are map[string]any.
func hostFacts() map[string]any {
	var facts map[string]any
	Expect(json.Unmarshal([]byte(`{
		"identity": "web1.example.com",
		"hostname": "web1",
		"os": "debian",
		"platform": "debian",
		"platform_version": "12.4",
		"kernel": "6.1.0-18-amd64",
		"arch": "amd64",
		"cpus": 4,
		"memory_mb": 7982,
		"load": 0.8,
		"virtualization": "kvm",
		"virtual": true,
		"tier": "3",
		"ruby": "1.10.2",
		"go": "v1.22.1",
		"offset": "-3",
		"empty": "",
		"nothing": null,
		"roles": ["web", "db"],
		"a.b": "flat",
		"disks": [{"name": "sda", "size_gb": 100}, {"name": "sdb"}],
		"host": {"info": {"platformFamily": "debian", "kernelVersion": "6.1.0"}}
	}`), &facts)).To(Succeed())
	return facts
}

func matches(term string, facts map[string]any) bool {
	f, err := protocol.ParseFilter([]string{term})
	Expect(err).ToNot(HaveOccurred())
	return f.Match(facts)
}

var _ = Describe("Filter", func() {
	DescribeTable("matches one term against facts",
		func(term string, want bool) {
			Expect(matches(term, hostFacts())).To(Equal(want))
		},
		// =
		Entry("= on a string", "os=debian", true),
		Entry("= is case sensitive", "os=Debian", false),
		Entry("= on another value", "os=rhel", false),
		Entry("= on a number uses its text", "cpus=4", true),
		Entry("= on a number with another text", "cpus=4.0", false),
		Entry("= on a float", "load=0.8", true),
		Entry("= on a bool", "virtual=true", true),
		Entry("= with an empty value on an empty fact", "empty=", true),
		Entry("= on a missing fact", "missing=x", false),
		Entry("= with an empty value on a missing fact", "missing=", false),
		Entry("= on a null fact", "nothing=", false),
		Entry("= on a map", "host=x", false),
		Entry("= with spaces around key and value", " os = debian ", true),
		// !=
		Entry("!= on an equal value", "os!=debian", false),
		Entry("!= on another value", "os!=rhel", true),
		Entry("!= on a missing fact", "missing!=x", true),
		Entry("!= on a number", "cpus!=8", true),
		Entry("!= on a map", "host!=x", true),
		// =~
		Entry("=~ prefix", "os=~^deb", true),
		Entry("=~ is unanchored", "kernel=~amd64", true),
		Entry("=~ not matching", "os=~^(rhel|rocky)$", false),
		Entry("=~ on a number's text", "memory_mb=~^79", true),
		Entry("=~ on a bool's text", "virtual=~^t", true),
		Entry("=~ on a missing fact", "missing=~.*", false),
		Entry("=~ with an empty expression", "os=~", true),
		// !~
		Entry("!~ not matching", "os!~^rhel", true),
		Entry("!~ matching", "os!~^deb", false),
		Entry("!~ on a missing fact", "missing!~.", true),
		// <, <=, >, >= on numbers
		Entry("< number", "memory_mb<8192", true),
		Entry("< number not", "memory_mb<4096", false),
		Entry("<= equal number", "cpus<=4", true),
		Entry("<= larger number not", "cpus<=3", false),
		Entry("> number", "cpus>2", true),
		Entry("> equal number not", "cpus>4", false),
		Entry(">= equal number", "cpus>=4", true),
		Entry(">= number not", "cpus>=5", false),
		Entry("> float fact compares numerically", "load>0.75", true),
		Entry("< negative string number", "offset<0", true),
		Entry("> negative literal", "cpus>-1", true),
		Entry("> exponent literal", "memory_mb>7.9e3", true),
		// ordering on versions
		Entry("1.10.2 > 1.9", "ruby>1.9", true),
		Entry("1.10.2 < 1.9 not", "ruby<1.9", false),
		Entry("12.4 >= 12", "platform_version>=12", true),
		Entry("12.4 > 12.10 not", "platform_version>12.10", false),
		Entry("12.4 <= 12.4", "platform_version<=12.4", true),
		Entry("kernel with a suffix > 6.1", "kernel>6.1", true),
		Entry("kernel >= 6.1.0-18", "kernel>=6.1.0-18", true),
		Entry("kernel < 6.1.0-9 not", "kernel<6.1.0-9", false),
		Entry("v prefix on the fact", "go>=1.22", true),
		Entry("v prefix on the value", "ruby<v1.11", true),
		Entry("string integer 3 > 2", "tier>2", true),
		Entry("string integer 3 < 10 (not lexical)", "tier<10", true),
		Entry("number fact against a version value", "cpus<4.1.1", true),
		// not comparable: no match
		Entry("ordering on a word", "os>1", false),
		Entry("ordering on a bool", "virtual>0", false),
		Entry("ordering on a map", "host>1", false),
		Entry("ordering on a missing fact", "missing<100", false),
		Entry("ordering on a null fact", "nothing<100", false),
		// nested keys
		Entry("nested map", "host.info.platformFamily=debian", true),
		Entry("nested map not", "host.info.platformFamily=rhel", false),
		Entry("nested map version", "host.info.kernelVersion>=6", true),
		Entry("nested missing", "host.info.nope=x", false),
		Entry("nested missing negated", "host.info.nope!=x", true),
		Entry("through a scalar", "os.name=x", false),
		Entry("list index", "disks.0.name=sda", true),
		Entry("second list item", "disks.1.name=~^sd", true),
		Entry("list index out of range", "disks.2.name=sdc", false),
		Entry("list index not a number", "disks.first.name=sda", false),
		Entry("number in a list item", "disks.0.size_gb>=100", true),
		Entry("list of scalars", "roles.1=db", true),
		Entry("flat key with a dot wins", "a.b=flat", true),
	)

	DescribeTable("matches facts of Go types built in process",
		func(term string, want bool) {
			facts := map[string]any{
				"cpus":   8,
				"big":    uint64(1 << 40),
				"small":  uint8(7),
				"ratio":  float32(0.5),
				"n":      json.Number("42"),
				"labels": map[string]string{"team": "ops"},
				"limits": map[string]int{"max": 10},
				"names":  []string{"a", "b"},
				"ports":  []int{22, 443},
				"ptr":    &map[string]any{"k": "v"},
			}
			Expect(matches(term, facts)).To(Equal(want))
		},
		Entry("int =", "cpus=8", true),
		Entry("int >", "cpus>7", true),
		Entry("uint64 text", "big=1099511627776", true),
		Entry("uint8 <", "small<8", true),
		Entry("float32 text", "ratio=0.5", true),
		Entry("json.Number >=", "n>=42", true),
		Entry("map[string]string", "labels.team=ops", true),
		Entry("map[string]int", "limits.max>9", true),
		Entry("[]string", "names.1=b", true),
		Entry("[]int", "ports.1=443", true),
		Entry("pointer to a map", "ptr.k=v", true),
	)

	It("ANDs every where term", func() {
		f, err := protocol.ParseFilter([]string{"os=debian", "cpus>=4", "role=web"})
		Expect(err).ToNot(HaveOccurred())
		facts := hostFacts()
		Expect(f.Match(facts)).To(BeFalse())
		facts["role"] = "web"
		Expect(f.Match(facts)).To(BeTrue())
	})

	It("matches everything when empty or nil", func() {
		f, err := protocol.ParseFilter(nil)
		Expect(err).ToNot(HaveOccurred())
		Expect(f.Empty()).To(BeTrue())
		Expect(f.Match(hostFacts())).To(BeTrue())
		var none *protocol.Filter
		Expect(none.Match(nil)).To(BeTrue())
		Expect(none.Empty()).To(BeTrue())
		Expect(none.Equalities()).To(BeEmpty())
	})

	DescribeTable("selects hosts by identity",
		func(hosts []string, where []string, identity any, want bool) {
			f, err := protocol.NewFilter(where, hosts)
			Expect(err).ToNot(HaveOccurred())
			facts := hostFacts()
			facts["identity"] = identity
			Expect(f.Match(facts)).To(Equal(want))
		},
		Entry("exact identity", []string{"web1.example.com"}, nil, "web1.example.com", true),
		Entry("exact identity is not a prefix", []string{"web1"}, nil, "web1.example.com", false),
		Entry("regex", []string{`/^web\d+\./`}, nil, "web1.example.com", true),
		Entry("regex not matching", []string{`/^db/`}, nil, "web1.example.com", false),
		Entry("hosts are ORed", []string{"db1", `/^web/`}, nil, "web1.example.com", true),
		Entry("hosts are ANDed with where", []string{`/^web/`}, []string{"os=rhel"}, "web1.example.com", false),
		Entry("hosts and where both match", []string{`/^web/`}, []string{"os=debian"}, "web1.example.com", true),
		Entry("missing identity", []string{`/.*/`}, nil, nil, false),
		Entry("identity of the wrong type", []string{`/.*/`}, nil, 5, false),
	)

	DescribeTable("refuses terms it cannot parse, naming the term",
		func(terms []string, want string) {
			_, err := protocol.ParseFilter(terms)
			Expect(err).To(MatchError(protocol.ErrBadRequest))
			Expect(err.Error()).To(ContainSubstring(want))
		},
		Entry("no operator", []string{"os"}, `filter "os": expected key=value`),
		Entry("empty term", []string{" "}, `filter " ": empty term`),
		Entry("no key", []string{"=debian"}, `filter "=debian": missing fact name`),
		Entry("space in key", []string{"o s=x"}, `fact name "o s" may only contain letters`),
		Entry("bad key character", []string{"os$=x"}, `fact name "os$"`),
		Entry("empty key segment", []string{"a..b=x"}, `fact name "a..b" has an empty segment`),
		Entry("leading dot", []string{".a=x"}, `has an empty segment`),
		Entry("double equals", []string{"os==debian"}, `filter "os==debian": use = for equality`),
		Entry("tilde alone", []string{"os~debian"}, `filter "os~debian": unknown operator at "~"`),
		Entry("bang alone", []string{"os!debian"}, `unknown operator at "!"`),
		Entry("invalid regex", []string{"os=~["}, "filter \"os=~[\": invalid regular expression: missing closing ]: `[`"),
		Entry("invalid negated regex", []string{"os!~a(b"}, `filter "os!~a(b": invalid regular expression: missing closing )`),
		Entry("ordering a word", []string{"memory_mb>lots"}, `filter "memory_mb>lots": > needs a number or a version, got "lots"`),
		Entry("ordering nothing", []string{"cpus<="}, `<= needs a number or a version, got ""`),
		Entry("ordering a path", []string{"cpus<1/2"}, `needs a number or a version`),
		Entry("term too long", []string{"os=" + strings.Repeat("x", 1022)}, `longer than 1024 bytes`),
		// JSON would carry each invalid byte as U+FFFD, three bytes: the
		// agents would judge another value, longer than the limit.
		Entry("value not UTF-8", []string{"os=deb\xffian"}, `filter "os=deb\xffian": value is not valid UTF-8`),
		Entry("value not UTF-8, grows past the limit on the wire", []string{"os=" + strings.Repeat("\xff", 400)}, `value is not valid UTF-8`),
		Entry("second term bad", []string{"os=debian", "os=~("}, `filter "os=~("`),
		Entry("too many terms", manyTerms(65), `65 terms, at most 64`),
	)

	It("accepts the maximum number of terms and the longest term", func() {
		_, err := protocol.ParseFilter(manyTerms(64))
		Expect(err).ToNot(HaveOccurred())
		_, err = protocol.ParseFilter([]string{"os=" + strings.Repeat("x", 1021)})
		Expect(err).ToNot(HaveOccurred())
	})

	DescribeTable("refuses host terms it cannot parse",
		func(host string, want string) {
			_, err := protocol.ParseHosts([]string{host})
			Expect(err).To(MatchError(protocol.ErrBadRequest))
			Expect(err.Error()).To(ContainSubstring(want))
		},
		Entry("space", "web 1", `host "web 1": character ' ' at position 3 is not allowed`),
		Entry("leading dash", "-web", `host "-web": must not start with '-'`),
		Entry("empty", "", `host "": must not be empty`),
		Entry("invalid regex", "/[/", `host "/[/": invalid regular expression`),
		Entry("empty regex", "//", `host "//": empty regular expression`),
	)

	It("trims host terms and refuses too many", func() {
		hosts, err := protocol.ParseHosts([]string{" web1 ", "/^db/"})
		Expect(err).ToNot(HaveOccurred())
		Expect(hosts).To(Equal([]string{"web1", "/^db/"}))
		_, err = protocol.ParseHosts(manyHosts(65))
		Expect(err).To(MatchError(ContainSubstring("65 terms, at most 64")))
	})

	It("returns its equality terms", func() {
		f, err := protocol.ParseFilter([]string{"os=debian", "cpus>2", "role=web", "os!=rhel"})
		Expect(err).ToNot(HaveOccurred())
		Expect(f.Equalities()).To(Equal([]protocol.FilterTerm{
			{Key: "os", Op: "=", Value: "debian"},
			{Key: "role", Op: "=", Value: "web"},
		}))
	})

	It("round trips through JSON and matches the same after decoding", func() {
		f, err := protocol.NewFilter([]string{"os=debian", "ruby>=1.9"}, []string{`/^web/`})
		Expect(err).ToNot(HaveOccurred())
		b, err := json.Marshal(f)
		Expect(err).ToNot(HaveOccurred())
		Expect(b).To(MatchJSON(`{"where":[{"key":"os","op":"=","value":"debian"},{"key":"ruby","op":">=","value":"1.9"}],"hosts":["/^web/"]}`))

		var back protocol.Filter
		Expect(json.Unmarshal(b, &back)).To(Succeed())
		Expect(back.Where).To(Equal(f.Where))
		Expect(back.Hosts).To(Equal(f.Hosts))
		// Uncompiled: Match compiles on the fly.
		Expect(back.Match(hostFacts())).To(BeTrue())
		Expect(back.Compile()).To(Succeed())
		Expect(back.Match(hostFacts())).To(BeTrue())

		empty, err := json.Marshal(&protocol.Filter{})
		Expect(err).ToNot(HaveOccurred())
		Expect(string(empty)).To(Equal(`{}`))
	})

	DescribeTable("refuses received filters that do not compile",
		func(f protocol.Filter, want string) {
			err := f.Compile()
			Expect(err).To(MatchError(protocol.ErrBadRequest))
			Expect(err.Error()).To(ContainSubstring(want))
			Expect(f.Match(hostFacts())).To(BeFalse(), "an invalid filter matches nothing")
		},
		Entry("unknown operator", protocol.Filter{Where: []protocol.FilterTerm{{Key: "os", Op: "~~", Value: "x"}}}, `filter "os~~x": unknown operator "~~"`),
		Entry("bad key", protocol.Filter{Where: []protocol.FilterTerm{{Key: "o s", Op: "=", Value: "x"}}}, `fact name "o s"`),
		Entry("bad regex", protocol.Filter{Where: []protocol.FilterTerm{{Key: "os", Op: "=~", Value: "("}}}, `invalid regular expression`),
		Entry("bad ordering value", protocol.Filter{Where: []protocol.FilterTerm{{Key: "cpus", Op: ">", Value: "x"}}}, `needs a number or a version`),
		Entry("term too long", protocol.Filter{Where: []protocol.FilterTerm{{Key: "os", Op: "=", Value: strings.Repeat("x", 1023)}}}, `longer than 1024 bytes`),
		Entry("bad host", protocol.Filter{Hosts: []string{"a b"}}, `host "a b"`),
		Entry("value not UTF-8", protocol.Filter{Where: []protocol.FilterTerm{{Key: "os", Op: "!=", Value: "\xfe"}}}, `value is not valid UTF-8`),
		Entry("host not UTF-8", protocol.Filter{Hosts: []string{"web\xff"}}, `host "web\xff"`),
		Entry("too many terms", protocol.Filter{Where: make([]protocol.FilterTerm, 65)}, `65 terms`),
		Entry("too many hosts", protocol.Filter{Hosts: manyHosts(65)}, `hosts: 65 terms`),
	)
})

func manyTerms(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("k%d=v", i)
	}
	return out
}

func manyHosts(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("h%d", i)
	}
	return out
}
