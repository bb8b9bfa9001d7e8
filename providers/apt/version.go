package apt

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Version is a parsed Debian version, [epoch:]upstream_version[-debian_revision].
type Version struct {
	// Epoch is the number before the first colon; 0 when there is none.
	Epoch int
	// Upstream is the upstream version: everything between the epoch and
	// the last hyphen.
	Upstream string
	// Revision is the Debian revision after the last hyphen; empty when
	// there is none.
	Revision string
}

// ParseVersion parses a Debian version. The epoch is the digits before the
// first colon; the revision is what follows the last hyphen. A hyphen at the
// very end starts no revision (there is none) and stays in the upstream
// version; dpkg refuses such versions, this parser compares them.
//
// Upstream versions may hold letters, digits and . + ~ - :, revisions
// letters, digits and . + ~. Like dpkg's comparison (and unlike its parser,
// which only warns), an upstream version need not start with a digit.
// Errors wrap ErrInvalidVersion.
func ParseVersion(s string) (Version, error) {
	var v Version
	if s == "" {
		return v, fmt.Errorf("%w: empty string", ErrInvalidVersion)
	}
	rest := s
	if epoch, after, ok := strings.Cut(s, ":"); ok {
		n, err := parseEpoch(epoch)
		if err != nil {
			return v, fmt.Errorf("%w %q: %s", ErrInvalidVersion, s, err)
		}
		v.Epoch, rest = n, after
	}
	v.Upstream = rest
	if i := strings.LastIndexByte(rest, '-'); i >= 0 && i < len(rest)-1 {
		v.Upstream, v.Revision = rest[:i], rest[i+1:]
	}
	switch {
	case v.Upstream == "":
		return v, fmt.Errorf("%w %q: empty upstream version", ErrInvalidVersion, s)
	case !validChars(v.Upstream, ".+~-:"):
		return v, fmt.Errorf("%w %q: invalid character in upstream version", ErrInvalidVersion, s)
	case !validChars(v.Revision, ".+~"):
		return v, fmt.Errorf("%w %q: invalid character in revision", ErrInvalidVersion, s)
	}
	return v, nil
}

func parseEpoch(s string) (int, error) {
	if s == "" {
		return 0, fmt.Errorf("empty epoch")
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, fmt.Errorf("epoch %q is not a number", s)
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > math.MaxInt32 {
		return 0, fmt.Errorf("epoch %q is too big", s)
	}
	return n, nil
}

func validChars(s, extra string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isDigit(c) && !isLetter(c) && !strings.ContainsRune(extra, rune(c)) {
			return false
		}
	}
	return true
}

// String returns the version in Debian form, without a zero epoch.
func (v Version) String() string {
	s := v.Upstream
	if v.Epoch != 0 {
		s = strconv.Itoa(v.Epoch) + ":" + s
	}
	if v.Revision != "" {
		s += "-" + v.Revision
	}
	return s
}

// Compare returns -1, 0 or 1 as v is older than, the same as or newer than
// o: epochs numerically, then upstream versions, then revisions, the latter
// two by the Debian string comparison (compareFragment).
func (v Version) Compare(o Version) int {
	switch {
	case v.Epoch < o.Epoch:
		return -1
	case v.Epoch > o.Epoch:
		return 1
	}
	if c := compareFragment(v.Upstream, o.Upstream); c != 0 {
		return c
	}
	return compareFragment(v.Revision, o.Revision)
}

// CompareVersions parses and compares two Debian versions, returning -1, 0
// or 1 as a is older than, the same as or newer than b.
func CompareVersions(a, b string) (int, error) {
	va, err := ParseVersion(a)
	if err != nil {
		return 0, err
	}
	vb, err := ParseVersion(b)
	if err != nil {
		return 0, err
	}
	return va.Compare(vb), nil
}

// compareFragment compares upstream versions or revisions as Debian policy
// (5.6.12) describes. Left to right, alternately: the leading run of
// non-digits of each is compared character by character, where a tilde
// sorts before anything (even the end), then letters in ASCII order, then
// all other characters in ASCII order; then the leading run of digits of
// each is compared as a number (an absent run counts as zero). The first
// difference decides.
func compareFragment(a, b string) int {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		for (i < len(a) && !isDigit(a[i])) || (j < len(b) && !isDigit(b[j])) {
			ac, bc := order(a, i), order(b, j)
			if ac != bc {
				return sign(ac - bc)
			}
			i++
			j++
		}
		for i < len(a) && a[i] == '0' {
			i++
		}
		for j < len(b) && b[j] == '0' {
			j++
		}
		// Equal-length digit runs without leading zeros compare by their
		// first differing digit; a longer run is the bigger number.
		firstDiff := 0
		for i < len(a) && isDigit(a[i]) && j < len(b) && isDigit(b[j]) {
			if firstDiff == 0 {
				firstDiff = int(a[i]) - int(b[j])
			}
			i++
			j++
		}
		if i < len(a) && isDigit(a[i]) {
			return 1
		}
		if j < len(b) && isDigit(b[j]) {
			return -1
		}
		if firstDiff != 0 {
			return sign(firstDiff)
		}
	}
	return 0
}

// order is the weight of s[i] among non-digits: tilde lowest, then the end
// of the string and digits, then letters, then everything else.
func order(s string, i int) int {
	if i >= len(s) {
		return 0
	}
	c := s[i]
	switch {
	case isDigit(c):
		return 0
	case isLetter(c):
		return int(c)
	case c == '~':
		return -1
	}
	return int(c) + 256
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}
