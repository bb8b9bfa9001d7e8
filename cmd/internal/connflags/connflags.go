// Package connflags registers the NATS connection flags every CCM Fleet
// command that talks to NATS takes, and turns them into natsconn.Options.
package connflags

import (
	"log/slog"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/natsconn"
)

// Flags are the parsed connection flags.
type Flags struct {
	servers, context, creds, nkey, cert, key, ca, inbox string
}

// Register adds --server (env CCM_SERVER), --context, --creds, --nkey,
// --tlscert, --tlskey, --tlsca and --inbox-prefix (env CCM_INBOX_PREFIX)
// to cmd.
func Register(cmd *fisk.CmdClause) *Flags {
	f := &Flags{}
	cmd.Flag("server", "NATS server URLs, comma separated (default nats://127.0.0.1:4222)").Envar("CCM_SERVER").PlaceHolder("URL").StringVar(&f.servers)
	cmd.Flag("context", "Use a nats CLI context for the connection").PlaceHolder("NAME").StringVar(&f.context)
	cmd.Flag("creds", "NATS credentials file").PlaceHolder("FILE").StringVar(&f.creds)
	cmd.Flag("nkey", "NATS nkey seed file").PlaceHolder("FILE").StringVar(&f.nkey)
	cmd.Flag("tlscert", "TLS client certificate").PlaceHolder("FILE").StringVar(&f.cert)
	cmd.Flag("tlskey", "TLS client key").PlaceHolder("FILE").StringVar(&f.key)
	cmd.Flag("tlsca", "TLS certificate authority to verify the server").PlaceHolder("FILE").StringVar(&f.ca)
	cmd.Flag("inbox-prefix", "Prefix of this connection's reply subjects instead of _INBOX, e.g. _INBOX.agent-web1, so NATS permissions can confine it to its own").Envar("CCM_INBOX_PREFIX").PlaceHolder("PREFIX").StringVar(&f.inbox)
	return f
}

// Options returns the natsconn options for a connection called name.
func (f *Flags) Options(name string, log *slog.Logger) natsconn.Options {
	return natsconn.Options{
		Servers: f.servers, Context: f.context, Creds: f.creds, NKey: f.nkey,
		TLSCert: f.cert, TLSKey: f.key, TLSCA: f.ca, InboxPrefix: f.inbox, Name: name, Logger: log,
	}
}
