package natsconn

import (
	"fmt"
	"log/slog"
	"net/url"
	"strings"
)

// DefaultServers is used when neither Options.Servers nor the context names
// a server.
const DefaultServers = "nats://127.0.0.1:4222"

// Options says how to reach and authenticate to NATS. Empty fields take the
// value of the named Context, then the default. Authentication is taken as a
// whole: when any of Creds, NKey, User, Password or Token is set here, the
// context's authentication is ignored. TLSCert and TLSKey likewise override
// the context's certificate as a pair; TLSCA overrides its CA alone.
type Options struct {
	// Servers is a comma-separated list of server URLs
	// (nats://host:4222, tls://host:4222). Default: the context's url, then
	// DefaultServers.
	Servers string

	// Context names a `nats` CLI context to read settings from; see
	// ContextPath. Empty reads none.
	Context string

	// Creds is a credentials file (user JWT and nkey seed).
	Creds string

	// NKey is an nkey seed file.
	NKey string

	// User and Password authenticate with a user name and password.
	User     string
	Password string

	// Token authenticates with a token.
	Token string

	// TLSCert and TLSKey are the client certificate and its key (PEM files).
	TLSCert string
	TLSKey  string

	// TLSCA is the file of certificate authorities the server certificate
	// is verified against. Setting any TLS file requires TLS.
	TLSCA string

	// Name is the connection name the server shows in monitoring.
	Name string

	// InboxPrefix replaces "_INBOX" as the prefix of the connection's
	// reply subjects (its requests' and JetStream's answers), e.g.
	// "_INBOX.agent-web1", so NATS permissions can let each client
	// subscribe to its own inboxes only. Empty keeps "_INBOX".
	InboxPrefix string

	// Logger receives connection events (disconnects at Warn, reconnects
	// and closes at Info, asynchronous errors at Warn). Default: discard.
	Logger *slog.Logger
}

// Resolve returns the options with the named context merged in (and
// Context cleared) and Servers defaulted. Errors wrap ErrContext or
// ErrCredentials.
func (o Options) Resolve() (Options, error) {
	r := o
	r.Context = ""
	if o.Context != "" {
		c, err := ReadContext(o.Context)
		if err != nil {
			return Options{}, err
		}
		if r.Servers == "" {
			r.Servers = c.URL
		}
		if o.Creds == "" && o.NKey == "" && o.User == "" && o.Password == "" && o.Token == "" {
			r.Creds, r.NKey, r.User, r.Password, r.Token = c.Creds, c.NKey, c.User, c.Password, c.Token
		}
		if o.TLSCert == "" && o.TLSKey == "" {
			r.TLSCert, r.TLSKey = c.Cert, c.Key
		}
		if o.TLSCA == "" {
			r.TLSCA = c.CA
		}
	}
	if strings.TrimSpace(r.Servers) == "" {
		r.Servers = DefaultServers
	}

	switch {
	case r.Creds != "" && r.NKey != "":
		return Options{}, fmt.Errorf("%w: creds %s and nkey %s are mutually exclusive", ErrCredentials, r.Creds, r.NKey)
	case r.TLSCert != "" && r.TLSKey == "":
		return Options{}, fmt.Errorf("%w: tls cert %s given without a key", ErrCredentials, r.TLSCert)
	case r.TLSKey != "" && r.TLSCert == "":
		return Options{}, fmt.Errorf("%w: tls key %s given without a cert", ErrCredentials, r.TLSKey)
	case r.InboxPrefix != "" && !validInboxPrefix(r.InboxPrefix):
		return Options{}, fmt.Errorf("%w: inbox prefix %q: want subject tokens without wildcards, e.g. _INBOX.agent-web1", ErrOptions, r.InboxPrefix)
	}
	return r, nil
}

// serverList splits Servers on commas, dropping empty entries.
func (o Options) serverList() []string {
	var out []string
	for s := range strings.SplitSeq(o.Servers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// redactedServers is Servers with passwords hidden, for logs and errors.
func (o Options) redactedServers() string {
	list := o.serverList()
	for i, s := range list {
		if !strings.Contains(s, "@") {
			continue
		}
		u, err := url.Parse(s)
		if err != nil {
			list[i] = "(unparsable url with credentials)"
			continue
		}
		if u.User != nil {
			if _, ok := u.User.Password(); ok {
				u.User = url.UserPassword(u.User.Username(), "xxxxx")
			} else {
				u.User = url.User("xxxxx") // a bare user part may be a token
			}
		}
		list[i] = u.String()
	}
	return strings.Join(list, ",")
}

// validInboxPrefix reports whether p is a literal subject: non-empty dot
// separated tokens without wildcards or whitespace.
func validInboxPrefix(p string) bool {
	for t := range strings.SplitSeq(p, ".") {
		if t == "" || strings.ContainsAny(t, "*> \t\r\n\x00") {
			return false
		}
	}
	return true
}
