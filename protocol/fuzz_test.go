package protocol_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ccm-fleet/ccm/protocol"
)

// FuzzTokenRoundTrip checks that every string encodes to one non-empty
// subject token free of '.', '*', '>' and whitespace that decodes back to
// it, and that any token DecodeToken accepts is the canonical encoding of
// what it decodes to.
func FuzzTokenRoundTrip(f *testing.F) {
	for _, seed := range []string{"", "debian", "web1.example.com", "a b", "*", ">", "%", "%2E", "%41", "café", "🚀", "\x00", "\xff\xfe", "a\tb\nc", "$SYS.>", "-_+=:@,~"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tok := protocol.EncodeToken(s)
		if tok == "" {
			t.Fatalf("EncodeToken(%q) is empty", s)
		}
		for i := 0; i < len(tok); i++ {
			if b := tok[i]; b <= ' ' || b >= 0x7f || b == '.' || b == '*' || b == '>' {
				t.Fatalf("EncodeToken(%q) = %q has byte %q at %d", s, tok, b, i)
			}
		}
		back, err := protocol.DecodeToken(tok)
		if err != nil {
			t.Fatalf("DecodeToken(EncodeToken(%q) = %q): %v", s, tok, err)
		}
		if back != s {
			t.Fatalf("round trip of %q gave %q via %q", s, back, tok)
		}
		if dec, err := protocol.DecodeToken(s); err == nil && protocol.EncodeToken(dec) != s {
			t.Fatalf("DecodeToken accepted non-canonical %q (decodes to %q)", s, dec)
		}
	})
}

// FuzzParseFilter checks that no input makes the filter parser panic, and
// that a filter that parses travels through JSON unchanged, compiles again
// and matches the same way after the round trip.
func FuzzParseFilter(f *testing.F) {
	for _, seed := range [][2]string{
		{"os=debian", "web1"}, {"cpus>=4", "/^web/"}, {"ruby>1.9", ""}, {"kernel=~^6\\.", "/[/"},
		{"a..b=x", "-x"}, {"os==x", "//"}, {"disks.0.name!~sd", "db1.example.com"},
		{"memory_mb<=1e3", "/.*/"}, {"v>v1.2.3-rc1", "h"}, {"x<-0.5", "_x"}, {"=", "/"},
	} {
		f.Add(seed[0], seed[1])
	}
	facts := map[string]any{
		"identity": "web1.example.com", "os": "debian", "cpus": float64(4), "ruby": "1.10.2",
		"kernel": "6.1.0-18-amd64", "v": "v1.2.3", "x": "-1", "flag": true, "nothing": nil,
		"disks": []any{map[string]any{"name": "sda"}}, "tags": map[string]string{"a": "b"},
	}
	f.Fuzz(func(t *testing.T, terms, host string) {
		var hosts []string
		if host != "" {
			hosts = []string{host}
		}
		flt, err := protocol.NewFilter(strings.Split(terms, "\n"), hosts)
		if err != nil {
			return
		}
		got := flt.Match(facts)
		b, err := json.Marshal(flt)
		if err != nil {
			t.Fatalf("marshal %#v: %v", flt, err)
		}
		var back protocol.Filter
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("unmarshal %s: %v", b, err)
		}
		if err := back.Compile(); err != nil {
			t.Fatalf("filter %s parsed but does not compile after a round trip: %v", b, err)
		}
		if !slices.Equal(back.Where, flt.Where) || !slices.Equal(back.Hosts, flt.Hosts) {
			t.Fatalf("filter %q %q changes on the wire: %s", flt.Where, flt.Hosts, b)
		}
		if back.Match(facts) != got {
			t.Fatalf("filter %s matches differently after a round trip", b)
		}
		flt.Equalities()
	})
}

// FuzzParseSelect checks that no input makes the select parser panic, that
// an expression that parses prints to a canonical form that parses back to
// the same tree (and prints the same again), and that the two match the
// same facts.
func FuzzParseSelect(f *testing.F) {
	for _, seed := range []string{
		"(os=debian and role=web) or env=prod", "not not a=1", "os=~^(a|b)$", `m="a \"b\" \\c"`,
		`m='x y'`, `m=""`, "not(role=db)", "cpus>=4 and cpus<16 or os!~^r", "((a=1))", "(a=(x)",
		"a=1 or (b=2 or c=3)", "not=1 and and=2", "os==x", "é=1", "a=\xff", "((((", "a=1)",
	} {
		f.Add(seed)
	}
	facts := map[string]any{
		"identity": "web1", "os": "debian", "role": "web", "cpus": float64(4), "m": "x y",
		"a": "1", "disks": []any{map[string]any{"name": "sda"}},
	}
	f.Fuzz(func(t *testing.T, expr string) {
		s, err := protocol.ParseSelect(expr)
		if err != nil {
			if !errors.Is(err, protocol.ErrSelect) || !errors.Is(err, protocol.ErrBadRequest) {
				t.Fatalf("ParseSelect(%q): %v is not ErrSelect and ErrBadRequest", expr, err)
			}
			return
		}
		printed := s.String()
		back, err := protocol.ParseSelect(printed)
		if err != nil {
			t.Fatalf("ParseSelect(%q) printed %q, which does not parse: %v", expr, printed, err)
		}
		if !reflect.DeepEqual(back.Root, s.Root) {
			t.Fatalf("ParseSelect(%q) printed %q, which parses to another tree:\n%#v\n%#v", expr, printed, s.Root, back.Root)
		}
		if again := back.String(); again != printed {
			t.Fatalf("%q printed %q, then %q", expr, printed, again)
		}
		if s.Match(facts) != back.Match(facts) {
			t.Fatalf("%q and its canonical %q match differently", expr, printed)
		}
	})
}
