package textdiff

import (
	"fmt"
	"strings"
)

// Context is the number of unchanged lines shown around each change.
const Context = 3

// MaxEdits bounds the edit distance Myers' search explores; beyond it the
// differing middle is reported as wholly replaced. It keeps the search's
// memory (about MaxEdits² integers) small.
const MaxEdits = 1000

// NoNewline marks a last line that has no line terminator, as diff -u does.
const NoNewline = `\ No newline at end of file`

// op is one line of an edit script.
type op struct {
	kind byte // ' ', '-', '+'
	line string
}

// Unified returns the unified diff turning a into b with Context lines of
// context, headed by "--- fromName" and "+++ toName"; "" when a and b are
// equal.
func Unified(fromName, toName string, a, b []byte) string {
	if string(a) == string(b) {
		return ""
	}
	ops := script(splitLines(string(a)), splitLines(string(b)))
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- %s\n+++ %s\n", fromName, toName)
	writeHunks(&sb, ops)
	return sb.String()
}

// splitLines splits s after each '\n'; the last element lacks the
// terminator when s does not end with one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// script returns the edit script turning a into b.
func script(a, b []string) []op {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ops := make([]op, 0, len(a)+len(b))
	for _, l := range a[:pre] {
		ops = append(ops, op{' ', l})
	}
	ops = append(ops, middle(a[pre:len(a)-suf], b[pre:len(b)-suf])...)
	for _, l := range a[len(a)-suf:] {
		ops = append(ops, op{' ', l})
	}
	return ops
}

// middle runs Myers' greedy search on a and b, which share no prefix or
// suffix, and backtracks through the saved frontiers to the edit script.
func middle(a, b []string) []op {
	n, m := len(a), len(b)
	replace := func() []op {
		ops := make([]op, 0, n+m)
		for _, l := range a {
			ops = append(ops, op{'-', l})
		}
		for _, l := range b {
			ops = append(ops, op{'+', l})
		}
		return ops
	}
	if n == 0 || m == 0 {
		return replace()
	}
	maxD := min(n+m, MaxEdits)
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	var trace [][]int
	found := -1
	for d := 0; d <= maxD && found < 0; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || k != d && v[off+k-1] < v[off+k+1] {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				found = d
				break
			}
		}
		// The frontier after step d, kept to walk back.
		snap := make([]int, 2*d+1)
		copy(snap, v[off-d:off+d+1])
		trace = append(trace, snap)
	}
	if found < 0 {
		return replace()
	}
	// Walk back from (n, m), collecting ops in reverse: each step d is one
	// edit from the frontier of step d-1 followed by a run of equal lines.
	rev := make([]op, 0, n+m)
	x, y := n, m
	for d := found; d > 0; d-- {
		prev := trace[d-1] // frontier of step d-1, diagonal k at k+d-1
		at := func(k int) int { return prev[k+d-1] }
		k := x - y
		down := k == -d || k != d && at(k-1) < at(k+1)
		pk := k - 1
		if down {
			pk = k + 1
		}
		px := at(pk)
		py := px - pk
		mx, my := px+1, py // after a deletion
		if down {
			mx, my = px, py+1 // after an insertion
		}
		for x > mx && y > my {
			x, y = x-1, y-1
			rev = append(rev, op{' ', a[x]})
		}
		if down {
			rev = append(rev, op{'+', b[py]})
		} else {
			rev = append(rev, op{'-', a[px]})
		}
		x, y = px, py
	}
	for x > 0 && y > 0 {
		x, y = x-1, y-1
		rev = append(rev, op{' ', a[x]})
	}
	ops := make([]op, len(rev))
	for i, o := range rev {
		ops[len(rev)-1-i] = o
	}
	return ops
}

// writeHunks writes the changes of ops as hunks with Context lines around
// them, merging hunks whose context would touch.
func writeHunks(sb *strings.Builder, ops []op) {
	// Line numbers (1-based) of each op in a and b before it applies.
	type pos struct{ a, b int }
	at := make([]pos, len(ops)+1)
	la, lb := 1, 1
	for i, o := range ops {
		at[i] = pos{la, lb}
		if o.kind != '+' {
			la++
		}
		if o.kind != '-' {
			lb++
		}
	}
	at[len(ops)] = pos{la, lb}
	i := 0
	for i < len(ops) {
		for i < len(ops) && ops[i].kind == ' ' {
			i++
		}
		if i == len(ops) {
			return
		}
		start := max(0, i-Context)
		end := i
		// Extend while the next change is within 2*Context unchanged lines.
		for {
			for end < len(ops) && ops[end].kind != ' ' {
				end++
			}
			same := end
			for same < len(ops) && ops[same].kind == ' ' {
				same++
			}
			if same < len(ops) && same-end <= 2*Context {
				end = same
				continue
			}
			end = min(len(ops), end+Context)
			break
		}
		writeHunk(sb, ops[start:end], at[start], at[end])
		i = end
	}
}

func writeHunk(sb *strings.Builder, ops []op, from, to struct{ a, b int }) {
	na, nb := to.a-from.a, to.b-from.b
	fmt.Fprintf(sb, "@@ -%s +%s @@\n", rangeOf(from.a, na), rangeOf(from.b, nb))
	for _, o := range ops {
		sb.WriteByte(o.kind)
		sb.WriteString(o.line)
		if !strings.HasSuffix(o.line, "\n") {
			sb.WriteString("\n" + NoNewline + "\n")
		}
	}
}

// rangeOf writes a hunk range as diff -u does: "start,count", "start" for
// one line, and for an empty range the line before it.
func rangeOf(start, count int) string {
	switch count {
	case 0:
		return fmt.Sprintf("%d,0", start-1)
	case 1:
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, count)
}
