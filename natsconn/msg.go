package natsconn

import "github.com/nats-io/nats.go"

// NewMsg returns a message for subject built with nats.NewMsg, with reply
// ("" for none), header (nil for none; the map is used, not copied) and
// data: the one way the project builds a message to publish.
func NewMsg(subject, reply string, header nats.Header, data []byte) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Reply = reply
	if header != nil {
		m.Header = header
	}
	m.Data = data
	return m
}
