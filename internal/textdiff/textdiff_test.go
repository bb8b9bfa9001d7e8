package textdiff_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ccm-fleet/ccm/internal/textdiff"
)

func TestUnified(t *testing.T) {
	cases := []struct {
		name, a, b, want string
	}{
		{"equal", "a\nb\n", "a\nb\n", ""},
		{"both empty", "", "", ""},
		{"from empty", "", "x\ny\n", "--- a\n+++ b\n@@ -0,0 +1,2 @@\n+x\n+y\n"},
		{"to empty", "x\n", "", "--- a\n+++ b\n@@ -1 +0,0 @@\n-x\n"},
		{"one line changed", "a\nb\nc\n", "a\nB\nc\n", "--- a\n+++ b\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"no newline at end", "a\nb", "a\nb\n", "--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"},
		{
			"context of three, two hunks",
			"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n",
			"1\nX\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\nY\n15\n",
			"--- a\n+++ b\n@@ -1,5 +1,5 @@\n 1\n-2\n+X\n 3\n 4\n 5\n@@ -11,5 +11,5 @@\n 11\n 12\n 13\n-14\n+Y\n 15\n",
		},
		{
			"close changes merge into one hunk",
			"1\n2\n3\n4\n5\n6\n7\n8\n9\n",
			"1\nX\n3\n4\n5\n6\n7\nY\n9\n",
			"--- a\n+++ b\n@@ -1,9 +1,9 @@\n 1\n-2\n+X\n 3\n 4\n 5\n 6\n 7\n-8\n+Y\n 9\n",
		},
		{"insert in middle", "a\nc\n", "a\nb\nc\n", "--- a\n+++ b\n@@ -1,2 +1,3 @@\n a\n+b\n c\n"},
		{"interleaved", "a\nb\nc\nd\n", "b\nx\nd\ne\n", "--- a\n+++ b\n@@ -1,4 +1,4 @@\n-a\n b\n-c\n+x\n d\n+e\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := textdiff.Unified("a", "b", []byte(c.a), []byte(c.b))
			if got != c.want {
				t.Fatalf("diff of %q and %q:\ngot:\n%s\nwant:\n%s", c.a, c.b, got, c.want)
			}
		})
	}
}

// apply rebuilds b from a and a unified diff of them, checking that every
// context and removed line matches a.
func apply(t *testing.T, a, diff string) string {
	t.Helper()
	al := strings.SplitAfter(a, "\n")
	var out strings.Builder
	ai := 0
	lines := strings.SplitAfter(diff, "\n")
	for i := 2; i < len(lines); i++ {
		l := lines[i]
		if l == "" {
			continue
		}
		if strings.HasPrefix(l, "@@") {
			var s1, c1, s2, c2 int
			n, _ := sscanRange(l, &s1, &c1, &s2, &c2)
			if n < 2 {
				t.Fatalf("bad hunk header %q", l)
			}
			start := s1 - 1
			if c1 == 0 {
				start = s1
			}
			for ai < start {
				out.WriteString(al[ai])
				ai++
			}
			continue
		}
		next := ""
		if i+1 < len(lines) {
			next = lines[i+1]
		}
		body := l[1:]
		if strings.HasPrefix(next, textdiff.NoNewline) {
			body = strings.TrimSuffix(body, "\n")
			i++
		}
		switch l[0] {
		case ' ', '-':
			if ai >= len(al) || al[ai] != body {
				t.Fatalf("line %d of a is %q, the diff says %q", ai+1, al[ai], body)
			}
			if l[0] == ' ' {
				out.WriteString(body)
			}
			ai++
		case '+':
			out.WriteString(body)
		}
	}
	for ai < len(al) {
		out.WriteString(al[ai])
		ai++
	}
	return out.String()
}

func sscanRange(l string, s1, c1, s2, c2 *int) (int, error) {
	// "@@ -s1[,c1] +s2[,c2] @@"
	f := strings.Fields(l)
	parse := func(r string, s, c *int) {
		r = r[1:]
		*c = 1
		if i := strings.IndexByte(r, ','); i >= 0 {
			*c = atoi(r[i+1:])
			r = r[:i]
		}
		*s = atoi(r)
	}
	parse(f[1], s1, c1)
	parse(f[2], s2, c2)
	return 2, nil
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

func TestUnifiedRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	gen := func() string {
		var sb strings.Builder
		for range r.IntN(40) {
			sb.WriteString(string(rune('a' + r.IntN(4))))
			sb.WriteByte('\n')
		}
		if r.IntN(4) == 0 {
			sb.WriteString("tail")
		}
		return sb.String()
	}
	for i := range 2000 {
		a, b := gen(), gen()
		d := textdiff.Unified("a", "b", []byte(a), []byte(b))
		if a == b {
			if d != "" {
				t.Fatalf("case %d: equal inputs gave a diff", i)
			}
			continue
		}
		if got := apply(t, a, d); got != b {
			t.Fatalf("case %d: applying the diff of %q and %q gave %q\n%s", i, a, b, got, d)
		}
	}
}

func TestUnifiedBoundedOnHostileInput(t *testing.T) {
	// Two inputs with nothing in common beyond MaxEdits: the middle is
	// shown as replaced, and the diff still applies.
	var a, b strings.Builder
	for i := range 3000 {
		a.WriteString("a" + string(rune('0'+i%10)) + "\n")
		b.WriteString("b" + string(rune('0'+i%10)) + "\n")
	}
	d := textdiff.Unified("a", "b", []byte(a.String()), []byte(b.String()))
	if got := apply(t, a.String(), d); got != b.String() {
		t.Fatal("the bounded diff does not rebuild b")
	}
	if n := strings.Count(d, "\n-"); n != 3000 {
		t.Fatalf("want 3000 removed lines, got %d", n)
	}
}

func FuzzUnified(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nB\nc\n")
	f.Add("", "x")
	f.Add("x\ny", "x\ny\n")
	f.Fuzz(func(t *testing.T, a, b string) {
		d := textdiff.Unified("a", "b", []byte(a), []byte(b))
		if a == b {
			if d != "" {
				t.Fatal("equal inputs gave a diff")
			}
			return
		}
		if got := apply(t, a, d); got != b {
			t.Fatalf("applying the diff of %q and %q gave %q\n%s", a, b, got, d)
		}
	})
}
