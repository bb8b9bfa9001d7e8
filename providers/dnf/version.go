package dnf

import (
	"strings"
)

// VersionCmp compares two version strings and returns -1, 0 or 1 as a is
// older than, the same as or newer than b.
//
// Each string is cut into segments: a single "-", a single ".", a run of
// digits, or a run of anything else. Segments compare pairwise, left to
// right, until two differ: a "-" loses to anything, then a "." loses to
// anything; two digit runs compare as numbers unless either has a leading
// zero, when they compare as strings; anything else compares as strings,
// ignoring case. When one string runs out of segments first, the whole
// strings compare as strings (so 1.0 < 1.0.1 and 1.0.0 > 1.0).
//
// With ignoreTrailingZeroes, trailing zero segments of the part before the
// first "-" are dropped first: 1.0.0-rc1 becomes 1-rc1, 2.0.0 becomes 2, so
// 1.0.0 equals 1.0. (Only whole ".0" segments go: 10 stays 10.)
func VersionCmp(a, b string, ignoreTrailingZeroes bool) int {
	if ignoreTrailingZeroes {
		a, b = trimTrailingZeroes(a), trimTrailingZeroes(b)
	}
	as, bs := segments(a), segments(b)
	for len(as) > 0 && len(bs) > 0 {
		x, y := as[0], bs[0]
		as, bs = as[1:], bs[1:]
		if x == y {
			continue
		}
		switch {
		case x == "-":
			return -1
		case y == "-":
			return 1
		case x == ".":
			return -1
		case y == ".":
			return 1
		}
		if isDigits(x) && isDigits(y) {
			if x[0] == '0' || y[0] == '0' {
				return strings.Compare(strings.ToUpper(x), strings.ToUpper(y))
			}
			return compareNumbers(x, y)
		}
		if c := strings.Compare(strings.ToUpper(x), strings.ToUpper(y)); c != 0 {
			return c
		}
		// Equal but for case: rpm's ordering ends here, as equal.
		return 0
	}
	return strings.Compare(a, b)
}

// segments cuts s into "-", ".", digit runs and runs of anything else.
func segments(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		j := i + 1
		switch c := s[i]; {
		case c == '-' || c == '.':
		case isDigit(c):
			for j < len(s) && isDigit(s[j]) {
				j++
			}
		default:
			for j < len(s) && !isDigit(s[j]) && s[j] != '-' && s[j] != '.' {
				j++
			}
		}
		out = append(out, s[i:j])
		i = j
	}
	return out
}

// compareNumbers compares two digit runs without leading zeros as numbers
// of any size.
func compareNumbers(x, y string) int {
	if len(x) != len(y) {
		if len(x) < len(y) {
			return -1
		}
		return 1
	}
	return strings.Compare(x, y)
}

// trimTrailingZeroes drops trailing ".0" (or ".00"...) segments from the
// part of v before its first "-".
func trimTrailingZeroes(v string) string {
	head, tail, hasTail := strings.Cut(v, "-")
	for {
		i := strings.LastIndexByte(head, '.')
		if i < 0 || i == len(head)-1 || strings.Trim(head[i+1:], "0") != "" {
			break
		}
		head = head[:i]
	}
	if hasTail {
		return head + "-" + tail
	}
	return head
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}
