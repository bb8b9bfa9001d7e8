package protocol

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxIdentityLength is the longest identity accepted, the length of a
// fully qualified domain name.
const MaxIdentityLength = 253

// ValidateIdentity checks a host identity: 1 to 253 ASCII letters, digits,
// '.', '-' and '_', not starting with '-', '.' or '_' ("_" starts protocol
// markers such as HistoryRequestToken), not ending with '.' and without
// empty labels (".."). Such an identity is also a valid NATS KV key. Errors
// wrap ErrBadRequest and quote the identity (its first 64 bytes when it is
// longer).
func ValidateIdentity(id string) error {
	if problem := identityProblem(id); problem != "" {
		return badRequest("identity %s: %s", quoteIdentity(id), problem)
	}
	return nil
}

// quotedIdentityBytes is how much of an identity an error quotes.
const quotedIdentityBytes = 64

// quoteIdentity quotes id for an error, cut after quotedIdentityBytes
// (at a character boundary) with a note of its length: an error about a
// huge identity stays short.
func quoteIdentity(id string) string {
	if len(id) <= quotedIdentityBytes {
		return fmt.Sprintf("%q", id)
	}
	cut := quotedIdentityBytes
	for cut > 0 && !utf8.RuneStart(id[cut]) {
		cut--
	}
	return fmt.Sprintf("%q… (%d bytes)", id[:cut], len(id))
}

// identityProblem describes what is wrong with id, or returns "".
func identityProblem(id string) string {
	switch {
	case id == "":
		return "must not be empty"
	case len(id) > MaxIdentityLength:
		return fmt.Sprintf("is %d characters long, the limit is %d", len(id), MaxIdentityLength)
	}
	for i := 0; i < len(id); i++ {
		b := id[i]
		if !isLetter(b) && !isDigit(b) && b != '.' && b != '-' && b != '_' {
			r, _ := utf8.DecodeRuneInString(id[i:])
			return fmt.Sprintf("character %q at position %d is not allowed: use letters, digits, '.', '-' and '_'", r, i)
		}
	}
	switch {
	case id[0] == '-' || id[0] == '.' || id[0] == '_':
		return fmt.Sprintf("must not start with %q", id[0])
	case id[len(id)-1] == '.':
		return "must not end with '.'"
	case strings.Contains(id, ".."):
		return "must not contain an empty label (\"..\")"
	}
	return ""
}
