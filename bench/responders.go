package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/ccm-fleet/ccm/protocol"
)

// ResponderOptions configure the floor's responders.
type ResponderOptions struct {
	// Server is the NATS URL.
	Server string
	// Count is how many responders run, each on its own connection.
	Count int
	// Subject is what every responder subscribes to.
	Subject string
	// ReplyBytes is the size of each reply's body.
	ReplyBytes int
	// Trust, when set, makes the responders the signed floor's: each
	// checks that every request is signed by this nkeys user public key
	// (protocol.Verify, as an agent admits a request) and signs its reply
	// with a key of its own (protocol.KeySigner, as an agent does). A
	// request that fails the check gets an unsigned refusal, which the
	// requester counts as unverified.
	Trust string
}

// RespondersCommand is the hidden command of Config.BenchBin that runs
// Responders (ccm-bench responders).
const RespondersCommand = "responders"

// respondersReady is what Responders prints once every responder serves.
const respondersReady = "responders ready"

// refusal is the unsigned body a signed responder answers a request with
// when its signature does not verify.
var refusal = []byte(`{"error":"request signature does not verify"}`)

// Responders runs Count plain nats.go responders, each with its own
// connection, answering every message on Subject with ReplyBytes bytes,
// until ctx ends. It prints a line with respondersReady to out once all of
// them are subscribed.
func Responders(ctx context.Context, o ResponderOptions, out io.Writer) error {
	if o.Count < 1 || o.Subject == "" || o.ReplyBytes < 1 {
		return errors.New("responders: count, subject and reply size are required")
	}
	if o.Trust != "" {
		if _, err := protocol.ParseUserKey(o.Trust); err != nil {
			return fmt.Errorf("responders: trusted key: %w", err)
		}
	}
	reply := filler(o.ReplyBytes)
	conns := make([]*nats.Conn, 0, o.Count)
	defer func() {
		for _, nc := range conns {
			nc.Close()
		}
	}()
	for i := range o.Count {
		nc, err := nats.Connect(o.Server, nats.Name(fmt.Sprintf("bench-responder-%d", i)), nats.MaxReconnects(-1))
		if err != nil {
			return fmt.Errorf("responder %d: %w", i, err)
		}
		conns = append(conns, nc)
		handler := func(m *nats.Msg) { _ = m.Respond(reply) }
		if o.Trust != "" {
			if handler, err = signedHandler(o.Trust, reply); err != nil {
				return fmt.Errorf("responder %d: %w", i, err)
			}
		}
		if _, err := nc.Subscribe(o.Subject, handler); err != nil {
			return fmt.Errorf("responder %d: %w", i, err)
		}
	}
	for i, nc := range conns {
		if err := nc.FlushTimeout(30 * time.Second); err != nil {
			return fmt.Errorf("responder %d: %w", i, err)
		}
	}
	fmt.Fprintf(out, "%d %s\n", o.Count, respondersReady)
	<-ctx.Done()
	return nil
}

// filler is a JSON body of n bytes (at least its frame).
func filler(n int) []byte {
	return []byte(`{"filler":"` + strings.Repeat("x", max(0, n-13)) + `"}`)
}

// signedHandler answers as a signed floor responder with a key of its own:
// it verifies each request's signature headers against trusted and signs
// reply for every request it accepts.
func signedHandler(trusted string, reply []byte) (nats.MsgHandler, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nil, fmt.Errorf("responder key: %w", err)
	}
	keys, err := protocol.NewKeySigner(kp)
	if err != nil {
		return nil, fmt.Errorf("responder key: %w", err)
	}
	return func(m *nats.Msg) {
		signer := m.Header.Get(protocol.HeaderSigner)
		if signer != trusted || protocol.Verify(m.Data, signer, m.Header.Get(protocol.HeaderSignature)) != nil {
			_ = m.Respond(refusal)
			return
		}
		r := nats.NewMsg(m.Reply)
		r.Header = nats.Header(keys.Header(reply))
		r.Data = reply
		_ = m.RespondMsg(r)
	}, nil
}
