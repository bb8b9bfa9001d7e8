package broker

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/ccm-fleet/ccm/protocol"
)

// MaxAuthFileSize bounds the auth file read by LoadAuthFile.
const MaxAuthFileSize = 1 << 20

// AuthFile is the broker's list of users, read from the YAML file named by
// Config.AuthFile. With it, every client must authenticate as one of the
// users and gets that user's permissions. Example:
//
//	users:
//	  - nkey: UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4
//	    permissions:
//	      publish: {allow: ["ccm.v1.history.*.web1"]}
//	      subscribe: {allow: ["ccm.v1.req.node.web1"], deny: ["ccm.v1.req.node.web2"]}
//	      allow_responses: true
//	  - user: ops
//	    password: "$2a$11$..." # plain text or a bcrypt hash
type AuthFile struct {
	// Users are the accounts clients authenticate as. At least one.
	Users []AuthUser `json:"users" yaml:"users"`
}

// AuthUser is one user of an AuthFile: either an nkey or a user name and
// password, and optional permissions (none: everything allowed).
type AuthUser struct {
	// NKey is the user's public nkey (a U… key); the client proves it
	// holds the seed. Exclusive with User and Password.
	NKey string `json:"nkey" yaml:"nkey"`
	// User is the user name for password authentication.
	User string `json:"user" yaml:"user"`
	// Password is the plain password or its bcrypt hash ($2a$, $2b$, …).
	// Required with User.
	Password string `json:"password" yaml:"password"`
	// Permissions restrict what the user may publish and subscribe to.
	Permissions *AuthPermissions `json:"permissions" yaml:"permissions"`
}

// AuthPermissions are a user's permissions, as in a nats-server
// configuration's permissions block.
type AuthPermissions struct {
	// Publish limits the subjects the user may publish to.
	Publish *SubjectRules `json:"publish" yaml:"publish"`
	// Subscribe limits the subjects the user may subscribe to; an entry
	// may name a queue group after a space ("subject queue").
	Subscribe *SubjectRules `json:"subscribe" yaml:"subscribe"`
	// AllowResponses lets the user publish to the reply subject of a
	// message it received, even when Publish does not allow it.
	AllowResponses *ResponseRule `json:"allow_responses" yaml:"allow_responses"`
}

// SubjectRules lists allowed and denied subjects (wildcards allowed).
// With an allow list only those subjects are allowed; a deny entry wins
// over an allow entry.
type SubjectRules struct {
	Allow []string `json:"allow" yaml:"allow"`
	Deny  []string `json:"deny" yaml:"deny"`
}

// ResponseRule is allow_responses: `true` (one response within two
// minutes), `false` (off) or `{max: N, expires: 1m}`.
type ResponseRule struct {
	// Enabled is false for `allow_responses: false`.
	Enabled bool
	// Max is how many responses may be sent per received request; 0 is
	// nats-server's default (1).
	Max int
	// Expires is how long after the request a response may be sent; 0 is
	// nats-server's default (2 minutes).
	Expires time.Duration
}

// UnmarshalJSON reads a boolean or a {max, expires} object, strictly
// (see protocol.DecodeJSONStrict).
func (r *ResponseRule) UnmarshalJSON(data []byte) error {
	switch string(bytes.TrimSpace(data)) {
	case "true":
		*r = ResponseRule{Enabled: true}
		return nil
	case "false":
		*r = ResponseRule{}
		return nil
	}
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return errors.New("want true, false or {max: N, expires: DURATION}")
	}
	var m struct {
		Max     int    `json:"max"`
		Expires string `json:"expires"`
	}
	if err := protocol.DecodeJSONStrict(data, &m); err != nil {
		return err
	}
	if m.Max < 0 {
		return fmt.Errorf("max %d: must not be negative", m.Max)
	}
	*r = ResponseRule{Enabled: true, Max: m.Max}
	if m.Expires != "" {
		d, err := time.ParseDuration(m.Expires)
		if err != nil || d < 0 {
			return fmt.Errorf("expires %q: want a duration such as 30s or 2m", m.Expires)
		}
		r.Expires = d
	}
	return nil
}

// LoadAuthFile reads and validates an auth file. Errors wrap
// ErrInvalidAuth and name the file.
func LoadAuthFile(path string) (*AuthFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: auth file %s: %w", ErrInvalidAuth, path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxAuthFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("%w: auth file %s: %w", ErrInvalidAuth, path, err)
	}
	if len(data) > MaxAuthFileSize {
		return nil, fmt.Errorf("%w: auth file %s: larger than %d bytes", ErrInvalidAuth, path, MaxAuthFileSize)
	}
	a, err := ParseAuthFile(data)
	if err != nil {
		return nil, fmt.Errorf("auth file %s: %w", path, err)
	}
	return a, nil
}

// ParseAuthFile decodes an auth file (YAML or JSON) with
// protocol.DecodeStrict (exact keys; unknown and duplicate keys, anchors and
// aliases, a second document and invalid UTF-8 are refused) and validates
// it. Errors wrap ErrInvalidAuth and name the key as written
// (`users[0]: unknown key "pasword"`).
func ParseAuthFile(data []byte) (*AuthFile, error) {
	var a AuthFile
	if _, err := protocol.DecodeStrict(data, &a, protocol.Limits{MaxBytes: MaxAuthFileSize}); err != nil {
		var pe *protocol.Error
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%w: %s", ErrInvalidAuth, pe.KeyMessage())
		}
		return nil, fmt.Errorf("%w: %w", ErrInvalidAuth, err)
	}
	if err := a.Validate(); err != nil {
		return nil, err
	}
	return &a, nil
}

// Validate reports every problem of the users in one error wrapping
// ErrInvalidAuth, or nil.
func (a *AuthFile) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(a.Users) == 0 {
		add("users: at least one user is required")
	}
	seen := map[string]int{}
	for i, u := range a.Users {
		name := fmt.Sprintf("users[%d]", i)
		switch {
		case u.NKey != "" && (u.User != "" || u.Password != ""):
			add("%s: nkey and user/password are exclusive", name)
		case u.NKey != "":
			name = fmt.Sprintf("users[%d] (nkey %s)", i, u.NKey)
			if !nkeys.IsValidPublicUserKey(u.NKey) {
				add("%s: not a public user nkey (U…)", name)
			}
		case u.User != "":
			name = fmt.Sprintf("users[%d] (user %s)", i, u.User)
			if u.Password == "" {
				add("%s: password is required", name)
			}
			if u.User == internalUser {
				add("%s: the name %s is reserved for the broker itself", name, internalUser)
			}
			if strings.ContainsAny(u.User, " \t\r\n") {
				add("%s: user must not contain whitespace", name)
			}
		default:
			add("%s: either nkey or user and password is required", name)
		}
		key := u.NKey + "\x00" + u.User
		if j, dup := seen[key]; dup {
			add("%s: the same user as users[%d]", name, j)
		}
		seen[key] = i
		if p := u.Permissions; p != nil {
			errs = append(errs, p.validate(name)...)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidAuth, errors.Join(errs...))
}

// validate checks every subject of the permissions.
func (p *AuthPermissions) validate(name string) []error {
	var errs []error
	check := func(field string, subjects []string, queue bool) {
		for _, s := range subjects {
			subj := s
			if queue {
				if sub, q, ok := strings.Cut(s, " "); ok {
					subj = sub
					if strings.TrimSpace(q) == "" || strings.ContainsAny(strings.TrimSpace(q), " \t") {
						errs = append(errs, fmt.Errorf("%s: permissions.%s %q: want \"subject\" or \"subject queue\"", name, field, s))
						continue
					}
				}
			}
			if !validSubject(subj) {
				errs = append(errs, fmt.Errorf("%s: permissions.%s %q: not a valid subject", name, field, s))
			}
		}
	}
	if p.Publish != nil {
		check("publish.allow", p.Publish.Allow, false)
		check("publish.deny", p.Publish.Deny, false)
	}
	if p.Subscribe != nil {
		check("subscribe.allow", p.Subscribe.Allow, true)
		check("subscribe.deny", p.Subscribe.Deny, true)
	}
	return errs
}

// validSubject reports whether s is a subject (wildcards allowed): dot
// separated non-empty tokens without whitespace, `>` only last.
func validSubject(s string) bool {
	if s == "" || strings.ContainsAny(s, " \t\r\n\x00") {
		return false
	}
	toks := strings.Split(s, ".")
	for i, t := range toks {
		if t == "" {
			return false
		}
		if t == ">" && i != len(toks)-1 {
			return false
		}
		if len(t) > 1 && strings.ContainsAny(t, "*>") {
			return false
		}
	}
	return true
}
