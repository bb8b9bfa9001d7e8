package dnf

import (
	"strings"
)

// EVR is an rpm version split as rpm splits it: [epoch:]version[-release].
type EVR struct {
	// Epoch is the digits before a colon that only digits precede; empty
	// when there is none, which compares as 0.
	Epoch string
	// Version is everything between the epoch and the last hyphen.
	Version string
	// Release is what follows the last hyphen; empty when there is none.
	Release string
}

// ParseEVR splits s the way rpm does: an epoch when s starts with digits
// (or nothing) and a colon, a release after the last hyphen, the version
// in between. It never fails: anything is some version, as it is to rpm.
func ParseEVR(s string) EVR {
	var v EVR
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i < len(s) && s[i] == ':' {
		v.Epoch, s = s[:i], s[i+1:]
	}
	if j := strings.LastIndexByte(s, '-'); j >= 0 {
		v.Version, v.Release = s[:j], s[j+1:]
	} else {
		v.Version = s
	}
	return v
}

// VersionCmp compares two rpm versions ([epoch:]version[-release]) as
// rpm orders them and returns -1, 0 or 1 as a is older than, the same as
// or newer than b: the epochs first (a missing epoch is 0), then the
// versions, then the releases (a missing release is older than any), each
// with rpm's rpmvercmp (see Vercmp).
//
// With ignoreTrailingZeroes, trailing zero segments of each version (not
// the release) are dropped first: 1.0.0 then equals 1.0, which rpm alone
// orders newer. (Only whole zero segments go: 10 stays 10.)
func VersionCmp(a, b string, ignoreTrailingZeroes bool) int {
	x, y := ParseEVR(a), ParseEVR(b)
	if ignoreTrailingZeroes {
		x.Version, y.Version = trimTrailingZeroes(x.Version), trimTrailingZeroes(y.Version)
	}
	if c := Vercmp(orZero(x.Epoch), orZero(y.Epoch)); c != 0 {
		return c
	}
	if c := Vercmp(x.Version, y.Version); c != 0 {
		return c
	}
	return Vercmp(x.Release, y.Release)
}

func orZero(epoch string) string {
	if epoch == "" {
		return "0"
	}
	return epoch
}

// Vercmp is rpm's rpmvercmp: it compares two version (or release) strings
// and returns -1, 0 or 1.
//
// Both strings are read as runs of ASCII digits and runs of ASCII letters;
// every other byte separates runs and only says where one ends, except
// "~" and "^". Runs compare pairwise, left to right, until two differ: two
// digit runs as numbers of any size (leading zeros do not count), two
// letter runs byte by byte (so case matters, upper first), and a digit run
// is newer than a letter run. A "~" sorts before anything, the end
// included (1.0~rc1 < 1.0); a "^" sorts after the end but before anything
// else (1.0 < 1.0^git1 < 1.0.1). When one string runs out of runs first,
// the other is newer.
func Vercmp(a, b string) int {
	if a == b {
		return 0
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		for i < len(a) && !isAlnum(a[i]) && a[i] != '~' && a[i] != '^' {
			i++
		}
		for j < len(b) && !isAlnum(b[j]) && b[j] != '~' && b[j] != '^' {
			j++
		}
		ca, cb := at(a, i), at(b, j)
		if ca == '~' || cb == '~' {
			if ca != '~' {
				return 1
			}
			if cb != '~' {
				return -1
			}
			i, j = i+1, j+1
			continue
		}
		if ca == '^' || cb == '^' {
			switch {
			case i == len(a):
				return -1
			case j == len(b):
				return 1
			case ca != '^':
				return 1
			case cb != '^':
				return -1
			}
			i, j = i+1, j+1
			continue
		}
		if i == len(a) || j == len(b) {
			break
		}
		numeric := isDigit(ca)
		class := isAlpha
		if numeric {
			class = isDigit
		}
		si, sj := i, j
		for i < len(a) && class(a[i]) {
			i++
		}
		for j < len(b) && class(b[j]) {
			j++
		}
		if j == sj {
			// Runs of different kinds: the digits are newer.
			if numeric {
				return 1
			}
			return -1
		}
		x, y := a[si:i], b[sj:j]
		if numeric {
			x, y = strings.TrimLeft(x, "0"), strings.TrimLeft(y, "0")
			if len(x) != len(y) {
				if len(x) < len(y) {
					return -1
				}
				return 1
			}
		}
		if c := strings.Compare(x, y); c != 0 {
			return c
		}
	}
	switch {
	case i >= len(a) && j >= len(b):
		return 0
	case i < len(a):
		return 1
	}
	return -1
}

// at is s[i], or 0 past the end.
func at(s string, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 0
}

// trimTrailingZeroes drops trailing zero segments (".0", ".00", ...) from
// a version.
func trimTrailingZeroes(v string) string {
	for {
		i := strings.LastIndexByte(v, '.')
		if i < 0 || i == len(v)-1 || strings.Trim(v[i+1:], "0") != "" {
			return v
		}
		v = v[:i]
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isAlnum(c byte) bool { return isDigit(c) || isAlpha(c) }
