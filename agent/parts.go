package agent

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ccm-fleet/ccm/protocol"
)

// publishReply sends a signed reply to subject: in one message when it
// fits the connection's max payload, as it always was, else in numbered
// parts (protocol.Split) that the requester joins and verifies against the
// signature, which covers the whole and rides on part 1. Parts 2 and up go
// first, so that part 1, which names the signer, is the last to arrive
// when the connection keeps their order.
func publishReply(nc *nats.Conn, subject string, h nats.Header, body []byte) error {
	maxPayload := nc.MaxPayload()
	if maxPayload <= 0 || protocol.FitsOneMessage(maxPayload, h, body) {
		return publish(nc, subject, h, body)
	}
	parts, err := protocol.Split(body, protocol.PartBytes(maxPayload, h))
	if err != nil {
		return fmt.Errorf("reply to %s: %w", subject, err)
	}
	for _, p := range parts[1:] {
		if err := publish(nc, subject, nats.Header(p.Headers()), p.Data); err != nil {
			return fmt.Errorf("reply to %s, part %d of %d: %w", subject, p.Index, p.Count, err)
		}
	}
	for k, v := range parts[0].Headers() {
		h[k] = v
	}
	if err := publish(nc, subject, h, parts[0].Data); err != nil {
		return fmt.Errorf("reply to %s, part 1 of %d: %w", subject, parts[0].Count, err)
	}
	return nil
}

// admitSize refuses a request that declares more resources than an agent
// accounts for (protocol.MaxRequestResources): its reply and history
// record would pass what they may hold. It is judged at admission, before
// anything runs.
func admitSize(b *body) *protocol.Error {
	if n := len(b.resources); n > protocol.MaxRequestResources {
		return protocol.NewError(protocol.CodeTooLarge, "the request declares %d resources, the limit is %d: nothing was run; split it into smaller requests", n, protocol.MaxRequestResources)
	}
	return nil
}

// tooLargeToRecord reports whether err says a record can never be written
// (larger than a message and than what parts may hold), so spooling it
// would not help.
func tooLargeToRecord(err error) bool {
	return errors.Is(err, nats.ErrMaxPayload) || errors.Is(err, protocol.ErrPartsTooLarge)
}

// recordTimeout is how long writing a record of size bytes may take: the
// history timeout for each MiB begun, as a record larger than a message
// is written one part at a time.
func recordTimeout(timeout time.Duration, size int) time.Duration {
	return timeout * time.Duration(1+size/(1<<20))
}

// shrinkReply makes a reply whose encoding passes limit fit, keeping one
// event per resource with its outcome (changed, failed, noop, errors), so
// that every resource is still accounted for: first the resolved
// properties, state documents, diffs and health-check output of the
// resources that neither changed nor failed are dropped, then those of
// every resource. Only when even that passes limit (names or messages of
// extraordinary size) are the events dropped, and the reply says
// too_large with the counts. A request is refused at admission when its
// resource count could make a reply this large (see admitSize); this step
// covers templates that expand far beyond the request's own size. It
// reports what it did, "" when the reply fit.
func shrinkReply(reply *protocol.FleetReply, limit int) (data []byte, what string, err error) {
	data, err = reply.Encode()
	if err != nil || len(data) <= limit {
		return data, "", err
	}
	strip := func(all bool) {
		for _, ev := range reply.Events {
			if all || (!ev.Changed && !ev.Failed) {
				ev.Properties, ev.Status, ev.Diff = nil, nil, nil
				for _, hc := range ev.HealthChecks {
					hc.Message = ""
				}
			}
		}
	}
	strip(false)
	if data, err = reply.Encode(); err != nil || len(data) <= limit {
		return data, "dropped the properties and state of the stable resources", err
	}
	strip(true)
	if data, err = reply.Encode(); err != nil || len(data) <= limit {
		return data, "dropped the properties and state of every resource", err
	}
	var changed, failed int
	for _, ev := range reply.Events {
		switch {
		case ev.Failed:
			failed++
		case ev.Changed:
			changed++
		}
	}
	n := len(reply.Events)
	reply.Events = []*protocol.TransactionEvent{}
	reply.Error = protocol.NewError(protocol.CodeTooLarge, "the reply of %d resources (%d changed, %d failed) passes %d bytes even without their properties: its events are not kept", n, changed, failed, limit)
	data, err = reply.Encode()
	return data, "dropped every event", err
}
