package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// ResponderOptions configure the floor's responders.
type ResponderOptions struct {
	// Server is the NATS URL.
	Server string
	// Count is how many responders run, each on its own connection.
	Count int
	// Subject is what every responder subscribes to.
	Subject string
	// ReplyBytes is the size of each reply.
	ReplyBytes int
}

// RespondersCommand is the hidden command of Config.BenchBin that runs
// Responders (ccm-bench responders).
const RespondersCommand = "responders"

// respondersReady is what Responders prints once every responder serves.
const respondersReady = "responders ready"

// Responders runs Count plain nats.go responders, each with its own
// connection, answering every message on Subject with ReplyBytes bytes,
// until ctx ends. It prints a line with respondersReady to out once all of
// them are subscribed.
func Responders(ctx context.Context, o ResponderOptions, out io.Writer) error {
	if o.Count < 1 || o.Subject == "" || o.ReplyBytes < 1 {
		return errors.New("responders: count, subject and reply size are required")
	}
	reply := []byte(`{"filler":"` + strings.Repeat("x", max(0, o.ReplyBytes-13)) + `"}`)
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
		if _, err := nc.Subscribe(o.Subject, func(m *nats.Msg) { _ = m.Respond(reply) }); err != nil {
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
