// Package connflags registers the NATS connection flags every CCM Fleet
// command that talks to NATS takes, and turns them into natsconn.Options
// following the nats CLI's conventions (NATS_URL, NATS_CONTEXT and the
// context chosen with `nats context select`).
package connflags

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/choria-io/fisk"
	"github.com/nats-io/nats.go"

	"github.com/ccm-fleet/ccm/natsconn"
)

// Flags are the parsed connection flags.
type Flags struct {
	servers, context, creds, nkey, cert, key, ca, inbox string
	// serverFlag: --server was given on the command line (not as
	// CCM_SERVER), for Explain.
	serverFlag bool
}

// Names are the long names of the connection flags Register adds (each
// takes a value), for program.HoistFlags: they may be written before the
// command, as with the nats CLI (`ccm-orch --context prod discover`).
var Names = []string{"server", "context", "creds", "nkey", "tlscert", "tlskey", "tlsca", "inbox-prefix"}

// Register adds --server/-s (env CCM_SERVER), --context, --creds, --nkey,
// --tlscert, --tlskey, --tlsca and --inbox-prefix (env CCM_INBOX_PREFIX)
// to cmd.
func Register(cmd *fisk.CmdClause) *Flags {
	f := &Flags{}
	cmd.Flag("server", "NATS server URLs, comma separated (default: $NATS_URL, the context's url, then nats://127.0.0.1:4222)").Short('s').Envar("CCM_SERVER").PlaceHolder("URL").IsSetByUser(&f.serverFlag).StringVar(&f.servers)
	cmd.Flag("context", "Use a nats CLI context for the connection (default: $NATS_CONTEXT, then the one chosen with `nats context select`)").PlaceHolder("NAME").StringVar(&f.context)
	cmd.Flag("creds", "NATS credentials file").PlaceHolder("FILE").StringVar(&f.creds)
	cmd.Flag("nkey", "NATS nkey seed file").PlaceHolder("FILE").StringVar(&f.nkey)
	cmd.Flag("tlscert", "TLS client certificate").PlaceHolder("FILE").StringVar(&f.cert)
	cmd.Flag("tlskey", "TLS client key").PlaceHolder("FILE").StringVar(&f.key)
	cmd.Flag("tlsca", "TLS certificate authority to verify the server").PlaceHolder("FILE").StringVar(&f.ca)
	cmd.Flag("inbox-prefix", "Prefix of this connection's reply subjects instead of _INBOX, e.g. _INBOX.agent-web1, so NATS permissions can confine it to its own").Envar("CCM_INBOX_PREFIX").PlaceHolder("PREFIX").StringVar(&f.inbox)
	return f
}

// Given says whether a server or a context was named for the connection:
// --server (or CCM_SERVER), --context, NATS_URL or NATS_CONTEXT. A context
// merely selected with `nats context select` does not count.
func (f *Flags) Given() bool {
	return f.servers != "" || f.context != "" || os.Getenv("NATS_URL") != "" || os.Getenv("NATS_CONTEXT") != ""
}

// Options returns the natsconn options for a connection called name. Each
// setting comes from the first of: its flag (or the flag's environment
// variable), base (e.g. the agent's configuration file), then the nats CLI
// conventions: servers from NATS_URL, the context from NATS_CONTEXT and
// then the selected context (natsconn.SelectedContext). The context's own
// settings fill what is still empty when the options are resolved. Errors
// wrap natsconn.ErrContext (the selected-context file cannot be read).
func (f *Flags) Options(name string, log *slog.Logger, base natsconn.Options) (natsconn.Options, error) {
	o := base
	o.Name, o.Logger = name, log
	for _, s := range []struct {
		dst  *string
		flag string
	}{
		{&o.Servers, f.servers}, {&o.Context, f.context}, {&o.TLSCA, f.ca}, {&o.InboxPrefix, f.inbox},
	} {
		if s.flag != "" {
			*s.dst = s.flag
		}
	}
	// Authentication is taken as a whole, and a certificate with its key:
	// a flag for either replaces both of base's.
	if f.creds != "" || f.nkey != "" {
		o.Creds, o.NKey = f.creds, f.nkey
	}
	if f.cert != "" || f.key != "" {
		o.TLSCert, o.TLSKey = f.cert, f.key
	}
	if o.Servers == "" {
		o.Servers = os.Getenv("NATS_URL")
	}
	if o.Context == "" {
		o.Context = os.Getenv("NATS_CONTEXT")
	}
	if o.Context == "" {
		sel, err := natsconn.SelectedContext()
		if err != nil {
			return natsconn.Options{}, err
		}
		o.Context = sel
	}
	return o, nil
}

// Explain returns err, a failed connection with options o (from Options
// over base, whose servers came from baseName, e.g. "the configuration
// file's servers"), saying where the server URLs came from and what to
// try: `(URL from NATS_URL; is the server running there? give another
// with --server URL or --context NAME)`. Other errors are returned as
// they are.
func (f *Flags) Explain(err error, o natsconn.Options, base natsconn.Options, baseName string) error {
	if !errors.Is(err, natsconn.ErrConnect) {
		return err
	}
	var from string
	switch {
	case f.servers != "" && f.serverFlag:
		from = "--server"
	case f.servers != "":
		from = "CCM_SERVER"
	case base.Servers != "":
		from = baseName
	case os.Getenv("NATS_URL") != "":
		from = "NATS_URL"
	case o.Context != "":
		from = fmt.Sprintf("nats context %q, named by %s", o.Context, f.contextSource(o.Context, base))
	default:
		from = "the default, as no --server, CCM_SERVER, NATS_URL or nats context was given"
	}
	return fmt.Errorf("%w (URL from %s); %s", err, from, connectHint(err))
}

// contextSource says where the context name came from.
func (f *Flags) contextSource(name string, base natsconn.Options) string {
	switch {
	case f.context != "":
		return "--context"
	case base.Context != "":
		return "the configuration"
	case os.Getenv("NATS_CONTEXT") == name:
		return "NATS_CONTEXT"
	default:
		return "nats context select"
	}
}

// connectHint says what to try after a failed connection, by its cause: a
// certificate that did not verify, credentials the server refused, or no
// server answering.
func connectHint(err error) string {
	var (
		verify  *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
	)
	switch {
	case errors.As(err, &verify) || errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid):
		return "the server's certificate did not verify: give the CA that signed it with --tlsca (or the context's ca), and a URL with the host name the certificate names"
	case errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked):
		return "the server refused the credentials: check --creds or --nkey (or the context's user), and that the server's accounts list this user"
	}
	return "is a NATS server running and reachable there? give another with --server URL (or CCM_SERVER, NATS_URL) or --context NAME"
}
