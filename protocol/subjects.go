package protocol

import "strings"

// NATS subjects, stream and bucket names of the fleet. Variable parts
// (identities, fact names and values, request ids) always go through
// EncodeToken so each fills exactly one subject token.
const (
	// SubjectRoot prefixes every subject of this protocol version.
	SubjectRoot = "ccm.v1"

	// RequestSubjectAll reaches every agent.
	RequestSubjectAll = "ccm.v1.req.all"
	// RequestSubjectPrefix is followed by "node.<identity>" or "fact.<key>.<value>".
	RequestSubjectPrefix = "ccm.v1.req"

	// DiscoverySubjectAll asks every agent to announce itself.
	DiscoverySubjectAll = "ccm.v1.disc.all"
	// DiscoverySubjectPrefix is followed by "node.<identity>" or "fact.<key>.<value>".
	DiscoverySubjectPrefix = "ccm.v1.disc"

	// HistorySubjectPrefix is followed by "<request_id>.<identity>" or
	// "<request_id>._request".
	HistorySubjectPrefix = "ccm.v1.history"
	// HistorySubjects is the subject filter of the history stream.
	HistorySubjects = "ccm.v1.history.>"
	// HistoryRequestToken is the last token of the record holding the
	// request itself; identities cannot start with "_", so no host collides.
	HistoryRequestToken = "_request"
	// HistoryStream is the JetStream stream keeping every request and reply.
	HistoryStream = "CCM_HISTORY"

	// NodesBucket is the JetStream KV bucket of the node registry, keyed by
	// identity (a valid identity is a valid KV key as it is).
	NodesBucket = "CCM_NODES"
)

// DefaultSubjectFacts returns the facts an agent subscribes to fact subjects
// for unless configured otherwise: os, platform and role.
func DefaultSubjectFacts() []string { return []string{"os", "platform", "role"} }

// RequestNodeSubject is the request subject of one agent, ccm.v1.req.node.<identity>.
func RequestNodeSubject(identity string) string {
	return RequestSubjectPrefix + ".node." + EncodeToken(identity)
}

// AgentServiceName is the NATS micro service name every agent registers
// under, so `nats micro ls` lists the fleet.
const AgentServiceName = "ccm-agent"

// AgentStatsSubject is the subject of an agent's stats endpoint,
// ccm.v1.agent.<identity>.stats: its request counters as JSON.
func AgentStatsSubject(identity string) string {
	return "ccm.v1.agent." + EncodeToken(identity) + ".stats"
}

// RequestFactSubject is the request subject of the agents whose fact key has
// value, ccm.v1.req.fact.<key>.<value>.
func RequestFactSubject(key, value string) string {
	return RequestSubjectPrefix + ".fact." + EncodeToken(key) + "." + EncodeToken(value)
}

// DiscoveryNodeSubject is the discovery subject of one agent, ccm.v1.disc.node.<identity>.
func DiscoveryNodeSubject(identity string) string {
	return DiscoverySubjectPrefix + ".node." + EncodeToken(identity)
}

// DiscoveryFactSubject is the discovery subject of the agents whose fact key
// has value, ccm.v1.disc.fact.<key>.<value>.
func DiscoveryFactSubject(key, value string) string {
	return DiscoverySubjectPrefix + ".fact." + EncodeToken(key) + "." + EncodeToken(value)
}

// HistorySubject is where one host's reply to a request is recorded,
// ccm.v1.history.<request_id>.<identity>.
func HistorySubject(requestID, identity string) string {
	return HistorySubjectPrefix + "." + EncodeToken(requestID) + "." + EncodeToken(identity)
}

// HistoryRequestSubject is where the request itself (with its expected set)
// is recorded, ccm.v1.history.<request_id>._request.
func HistoryRequestSubject(requestID string) string {
	return HistorySubjectPrefix + "." + EncodeToken(requestID) + "." + HistoryRequestToken
}

// HistoryRunSubjects is the filter subject selecting every record of one
// request, ccm.v1.history.<request_id>.>.
func HistoryRunSubjects(requestID string) string {
	return HistorySubjectPrefix + "." + EncodeToken(requestID) + ".>"
}

// ParseHistorySubject splits a history subject into its request id and
// identity; identity is empty when the subject is the request record.
func ParseHistorySubject(subject string) (requestID, identity string, err error) {
	rest, ok := strings.CutPrefix(subject, HistorySubjectPrefix+".")
	if !ok {
		return "", "", badRequest("subject %q is not a history subject", subject)
	}
	tokID, tokHost, ok := strings.Cut(rest, ".")
	if !ok || strings.Contains(tokHost, ".") {
		return "", "", badRequest("subject %q: expected %s.<request_id>.<identity>", subject, HistorySubjectPrefix)
	}
	if requestID, err = DecodeToken(tokID); err != nil {
		return "", "", badRequest("subject %q: request id: %s", subject, messageOf(err))
	}
	if tokHost == HistoryRequestToken {
		return requestID, "", nil
	}
	if identity, err = DecodeToken(tokHost); err != nil {
		return "", "", badRequest("subject %q: identity: %s", subject, messageOf(err))
	}
	return requestID, identity, nil
}

// EmptyToken is the token EncodeToken gives the empty string. Every other
// "%" in a token starts a two-digit escape, so no other string encodes to it.
const EmptyToken = "%"

const upperHex = "0123456789ABCDEF"

// tokenLiteral reports whether b is written as itself in a token: ASCII
// letters, digits and - _ + = : @ , ~. Every other byte, including '.',
// '*', '>', '%', whitespace, control bytes and each byte of non-ASCII
// UTF-8, is written %XX with upper-case hex.
func tokenLiteral(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	return strings.IndexByte("-_+=:@,~", b) >= 0
}

// EncodeToken encodes any string into one non-empty NATS subject token. The
// encoding is canonical (one token per string) and reversed by DecodeToken:
// bytes outside ASCII letters, digits and - _ + = : @ , ~ become %XX, and the
// empty string becomes EmptyToken. "22.04" encodes to "22%2E04".
func EncodeToken(s string) string {
	if s == "" {
		return EmptyToken
	}
	escapes := 0
	for i := 0; i < len(s); i++ {
		if !tokenLiteral(s[i]) {
			escapes++
		}
	}
	if escapes == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 2*escapes)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if tokenLiteral(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(upperHex[c>>4])
		b.WriteByte(upperHex[c&0x0f])
	}
	return b.String()
}

// DecodeToken reverses EncodeToken. Only canonical tokens are accepted: a
// token EncodeToken could not have produced (lower-case hex, an escaped
// letter, a raw '.') is an error wrapping ErrBadRequest.
func DecodeToken(tok string) (string, error) {
	if tok == EmptyToken {
		return "", nil
	}
	if tok == "" {
		return "", badRequest("empty subject token")
	}
	if !strings.Contains(tok, "%") {
		for i := 0; i < len(tok); i++ {
			if !tokenLiteral(tok[i]) {
				return "", badRequest("subject token %q: byte %d (%q) must be escaped", tok, i, tok[i])
			}
		}
		return tok, nil
	}
	out := make([]byte, 0, len(tok))
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		if tokenLiteral(c) {
			out = append(out, c)
			continue
		}
		if c != '%' {
			return "", badRequest("subject token %q: byte %d (%q) must be escaped", tok, i, c)
		}
		if i+2 >= len(tok) {
			return "", badRequest("subject token %q: incomplete escape at byte %d", tok, i)
		}
		hi, lo := strings.IndexByte(upperHex, tok[i+1]), strings.IndexByte(upperHex, tok[i+2])
		if hi < 0 || lo < 0 {
			return "", badRequest("subject token %q: escape at byte %d needs two upper-case hex digits", tok, i)
		}
		d := byte(hi<<4 | lo)
		if tokenLiteral(d) {
			return "", badRequest("subject token %q: %q at byte %d is escaped but must be written as itself", tok, d, i)
		}
		out = append(out, d)
		i += 2
	}
	return string(out), nil
}
