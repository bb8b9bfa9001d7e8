package agent

import (
	"github.com/nats-io/nats.go"

	"github.com/ccm-fleet/ccm/protocol"
)

// responder answers a finished job, like nats.go micro's Request.Respond:
// finish hands it the reply once, encoded and signed, and asks it for the
// marks of the job's history record.
type responder interface {
	// respond delivers the reply of r (data is its encoding, never nil,
	// sig its signature); a failure is logged, not returned: the reply is
	// in history and the replay cache already.
	respond(r *job, data []byte, sig string)
	// mark adds what the responder knows of the job to the header of its
	// history record (an assignment run's name, revision and trigger).
	mark(h nats.Header)
}

// natsReply answers a fleet request on the requester's reply subject.
type natsReply struct {
	nc      *nats.Conn
	keys    *protocol.KeySigner
	subject string
}

var _ responder = natsReply{}

func (n natsReply) respond(r *job, data []byte, sig string) {
	if n.subject == "" {
		return
	}
	if err := publishReply(n.nc, n.subject, signedHeader(n.keys, sig), data); err != nil {
		r.log.Warn("could not send a reply", "error", err)
	}
}

func (natsReply) mark(nats.Header) {}

// historyOnly answers a job nobody waits for (a request a previous run of
// the agent left unanswered): its answer goes to history and the audit log
// only.
type historyOnly struct{}

var _ responder = historyOnly{}

func (historyOnly) respond(*job, []byte, string) {}
func (historyOnly) mark(nats.Header)             {}

// publish publishes data on subject with header h.
func publish(nc *nats.Conn, subject string, h nats.Header, data []byte) error {
	m := nats.NewMsg(subject)
	if h != nil {
		m.Header = h
	}
	m.Data = data
	return nc.PublishMsg(m)
}

// signedHeader is the header of a message signed with keys: the public
// key and sig.
func signedHeader(keys *protocol.KeySigner, sig string) nats.Header {
	h := nats.Header{}
	h.Set(protocol.HeaderSigner, keys.PublicKey())
	h.Set(protocol.HeaderSignature, sig)
	return h
}

// settler is a responder that learns the reply of a job that ran before
// finish records it (a watch repair's backoff goes in its record).
type settler interface {
	settle(reply *protocol.FleetReply)
}
