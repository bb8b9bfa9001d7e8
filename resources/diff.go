package resources

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"unicode/utf8"

	"github.com/ccm-fleet/ccm/internal/textdiff"
)

// ContentDiff compares the current and desired content of the file name
// and returns either a unified diff (3 lines of context, "" when equal) or,
// for binary content, a one-line summary with both sizes and SHA-256
// checksums. Callers check sizes against their limit before reading; see
// SizeSummary.
func ContentDiff(name string, have, want []byte) (diff, summary string) {
	if string(have) == string(want) {
		return "", ""
	}
	if IsBinary(have) || IsBinary(want) {
		return "", fmt.Sprintf("binary content differs: current %d bytes sha256:%s, desired %d bytes sha256:%s",
			len(have), checksum(have), len(want), checksum(want))
	}
	return textdiff.Unified(name+" (current)", name+" (desired)", have, want), ""
}

// SizeSummary is the summary line of content over the diff limit.
func SizeSummary(limit, haveSize int64, haveSum string, wantSize int64, wantSum string) string {
	return fmt.Sprintf("content differs (over the %d-byte diff limit): current %d bytes%s, desired %d bytes%s",
		limit, haveSize, sumText(haveSum), wantSize, sumText(wantSum))
}

func sumText(sum string) string {
	if sum == "" {
		return ""
	}
	return " sha256:" + sum
}

func checksum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// IsBinary reports content a line diff would not show usefully: a NUL
// byte or invalid UTF-8 in its first 8 KiB.
func IsBinary(b []byte) bool {
	const window = 8 << 10
	head := b[:min(len(b), window)]
	for _, c := range head {
		if c == 0 {
			return true
		}
	}
	if utf8.Valid(head) {
		return false
	}
	// A multi-byte rune cut at the window's end is not a sign of binary.
	for k := 1; len(b) > window && k < utf8.UTFMax; k++ {
		if utf8.Valid(head[:len(head)-k]) {
			return false
		}
	}
	return true
}
