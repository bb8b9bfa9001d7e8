package protocol

import (
	"cmp"
	"strings"
)

// Version-like values for the filter's ordering operators. A value looks
// like a version when it starts with a digit (optionally after "v" or "V")
// and holds only letters, digits and . - _ + ~ :. Two versions compare run
// by run (see compareVersions); this is deliberately simpler than any one
// package manager's rules.

func isDigit(b byte) bool { return '0' <= b && b <= '9' }

func isLetter(b byte) bool { return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' }

// looksLikeVersion: an optional v, a digit, then letters, digits and . - _ + ~ :
func looksLikeVersion(s string) bool {
	s = trimVersionPrefix(s)
	if s == "" || !isDigit(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		b := s[i]
		if !isDigit(b) && !isLetter(b) && !strings.ContainsRune(".-_+~:", rune(b)) {
			return false
		}
	}
	return true
}

func trimVersionPrefix(s string) string {
	if len(s) > 1 && (s[0] == 'v' || s[0] == 'V') && isDigit(s[1]) {
		return s[1:]
	}
	return s
}

// compareVersions orders two version-like strings run by run.
func compareVersions(a, b string) int {
	a, b = trimVersionPrefix(a), trimVersionPrefix(b)
	for {
		ra, restA := nextRun(a)
		rb, restB := nextRun(b)
		switch {
		case ra == "" && rb == "":
			return 0
		case ra == "":
			return -1
		case rb == "":
			return 1
		}
		if c := compareRuns(ra, rb); c != 0 {
			return c
		}
		a, b = restA, restB
	}
}

// nextRun skips separators and returns the next run of digits or of letters.
func nextRun(s string) (string, string) {
	i := 0
	for i < len(s) && !isDigit(s[i]) && !isLetter(s[i]) {
		i++
	}
	s = s[i:]
	if s == "" {
		return "", ""
	}
	digit := isDigit(s[0])
	j := 1
	for j < len(s) && (isDigit(s[j]) == digit) && (isDigit(s[j]) || isLetter(s[j])) {
		j++
	}
	return s[:j], s[j:]
}

func compareRuns(a, b string) int {
	da, db := isDigit(a[0]), isDigit(b[0])
	switch {
	case da && db:
		a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
		if c := cmp.Compare(len(a), len(b)); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	case da:
		return 1
	case db:
		return -1
	default:
		return strings.Compare(a, b)
	}
}
