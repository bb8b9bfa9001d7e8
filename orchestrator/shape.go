package orchestrator

import "strings"

// HostPlaceholder stands for a host's identity in a Group's Message.
const HostPlaceholder = "<host>"

// messageShape is message with each occurrence of the host's identity
// replaced by HostPlaceholder, so hosts whose messages differ only by the
// host they came from (a templated path such as
// /srv/{{ lookup('facts.identity') }}/motd expanded on each host) fall into
// one group: 300 hosts failing the same way make one group of 300, not 300
// groups of one.
//
// The rule is deliberately simple: only the identity is replaced, and only
// where it stands as a whole token, that is where the characters on either
// side are not letters, digits, '-' or '_' (so sim-0001 is replaced in
// /srv/sim-0001/motd and in sim-0001.example.com but not in sim-00012).
// Other fact values are left as they are: two hosts whose messages differ
// otherwise stay in different groups. An identity shorter than 3
// characters is never replaced, as it would match too much.
func messageShape(message, identity string) string {
	return replaceToken(message, identity, HostPlaceholder)
}

// replaceToken replaces each whole-token occurrence of value in message by
// placeholder, by the rule messageShape documents; a value shorter than 3
// characters is never replaced.
func replaceToken(message, identity, placeholder string) string {
	if len(identity) < 3 || !strings.Contains(message, identity) {
		return message
	}
	var b strings.Builder
	from := 0
	for {
		i := strings.Index(message[from:], identity)
		if i < 0 {
			break
		}
		i += from
		end := i + len(identity)
		b.WriteString(message[from:i])
		if (i == 0 || !tokenByte(message[i-1])) && (end == len(message) || !tokenByte(message[end])) {
			b.WriteString(placeholder)
		} else {
			b.WriteString(identity)
		}
		from = end
	}
	b.WriteString(message[from:])
	return b.String()
}

// tokenByte reports whether c can be part of a host identity token.
func tokenByte(c byte) bool {
	return c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
