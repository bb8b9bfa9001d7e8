package orchestrator

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ccm-fleet/ccm/natsconn"
	"github.com/ccm-fleet/ccm/protocol"
)

// Reply buffering bounds: the channel between the subscription and the
// collector, and what the NATS client may hold behind it before it drops
// messages as a slow consumer.
const (
	inboxChannelSize = 1024
	inboxPendingMsgs = 1 << 16
	inboxPendingSize = 64 << 20
)

// The header and code of the server's "no responders" status message.
const (
	statusHeader       = "Status"
	noRespondersStatus = "503"
)

// inbox is one reply subscription feeding a bounded channel. The
// subscription's handler blocks while the channel is full (NATS then buffers
// up to the pending limits) and returns at once after close.
type inbox struct {
	subject string
	ch      chan inboxMsg
	// raw feeds the verifiers, which check signatures in parallel and
	// pass the messages on to ch
	raw       chan *nats.Msg
	sub       *nats.Subscription
	done      chan struct{}
	once      sync.Once
	verifiers sync.WaitGroup
	// pending counts the messages received and not yet passed on to ch:
	// a discovery round is not quiet while replies wait to be verified
	pending atomic.Int64
	// parts joins the replies that arrive in parts; partial is signalled
	// when a part came that did not complete its reply, so the collector
	// watches the reply's time
	parts   *assembler
	partial chan struct{}
	// keys checks the replies' signatures
	keys *protocol.Verifier
}

// inboxVerifiers is how many goroutines check reply signatures at most.
const inboxVerifiers = 4

// openInbox subscribes to a fresh inbox subject of nc.
func openInbox(nc *nats.Conn, keys *protocol.Verifier) (*inbox, error) {
	in := &inbox{
		keys:    keys,
		subject: nc.NewInbox(),
		ch:      make(chan inboxMsg, inboxChannelSize),
		raw:     make(chan *nats.Msg, inboxChannelSize),
		done:    make(chan struct{}),
		parts:   newAssembler(time.Now),
		partial: make(chan struct{}, 1),
	}
	sub, err := nc.Subscribe(in.subject, func(m *nats.Msg) {
		if isNoResponders(m) {
			return
		}
		if whole, part := in.parts.add(m); part {
			if whole == nil {
				select {
				case in.partial <- struct{}{}:
				default:
				}
				return
			}
			m = whole
		}
		in.pending.Add(1)
		select {
		case in.raw <- m:
		case <-in.done:
		}
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe to replies: %w", err)
	}
	// Signatures are checked off the subscription's goroutine and the
	// collector's, on every core: a large fleet's replies arrive faster
	// than one core verifies them.
	for range min(inboxVerifiers, max(1, runtime.GOMAXPROCS(0))) {
		in.verifiers.Add(1)
		go in.verify()
	}
	if err := sub.SetPendingLimits(inboxPendingMsgs, inboxPendingSize); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("subscribe to replies: %w", err)
	}
	in.sub = sub
	return in, nil
}

// verify checks the signature of each raw message and passes it on, until
// the inbox is closed.
func (in *inbox) verify() {
	defer in.verifiers.Done()
	for {
		select {
		case m := <-in.raw:
			msg := verified(in.keys, m.Data, m.Header)
			select {
			case in.ch <- msg:
				in.pending.Add(-1)
			case <-in.done:
				return
			}
		case <-in.done:
			return
		}
	}
}

// drained reports whether every message the server had sent to the inbox
// has been received and passed on: after a round trip to the server
// (messages sent before its answer are read before it) nothing waits in
// the subscription or the verifiers. A process that was kept off the CPU
// past a quiet window has replies still unread in its socket; those are
// not quiet. A failed round trip is not drained either.
func (in *inbox) drained(nc *nats.Conn, timeout time.Duration) bool {
	if nc.FlushTimeout(timeout) != nil {
		return false
	}
	if msgs, _, err := in.sub.Pending(); err != nil || msgs > 0 {
		return false
	}
	return !in.waiting()
}

// waiting reports whether received messages wait to be verified or to be
// taken from ch.
func (in *inbox) waiting() bool { return in.pending.Load() > 0 || len(in.ch) > 0 }

// close stops the subscription and the verifiers and releases a handler
// blocked on a channel. It is safe to call more than once.
func (in *inbox) close() {
	in.once.Do(func() {
		close(in.done)
		_ = in.sub.Unsubscribe()
		in.verifiers.Wait()
	})
}

// inboxMsg is one message received on the inbox (or a history record): its
// body and, when it carries a signature, the signer it names and whether the signature is
// that signer's over the body.
type inboxMsg struct {
	data   []byte
	signer string
	signed bool
	// identity is the identity of a history record's subject; empty for
	// a live reply
	identity string
}

// verified is data with the signer its header names and whether the
// signature is that signer's over data: the one check of live replies and
// of history records. keys nil checks with protocol.Verify.
func verified(keys *protocol.Verifier, data []byte, header nats.Header) inboxMsg {
	msg := inboxMsg{data: data}
	if signer := header.Get(protocol.HeaderSigner); signer != "" {
		msg.signer = signer
		sig := header.Get(protocol.HeaderSignature)
		if keys != nil {
			msg.signed = keys.Verify(data, signer, sig) == nil
		} else {
			msg.signed = protocol.Verify(data, signer, sig) == nil
		}
	}
	return msg
}

// publish sends data on subject with the inbox as reply subject and the
// given headers (nil: none).
func (in *inbox) publish(nc *nats.Conn, subject string, data []byte, header nats.Header) error {
	if err := nc.PublishMsg(natsconn.NewMsg(subject, in.subject, header, data)); err != nil {
		return fmt.Errorf("%w on %s: %w", ErrPublish, subject, err)
	}
	return nil
}

// isNoResponders reports whether m is the server's "no responders" status,
// sent to the reply subject when a request's subject had no subscriber (a
// node subject of a host that is not connected). It carries no identity, so
// it is not a reply; the host ends as no reply at its deadline.
func isNoResponders(m *nats.Msg) bool {
	return len(m.Data) == 0 && m.Header.Get(statusHeader) == noRespondersStatus
}
