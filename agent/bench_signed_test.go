package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/resources/engine"
)

// signedMsg is one signed request ready to publish.
type signedMsg struct {
	inbox, signer, sig string
	body               []byte
}

// BenchmarkSignedNoop admits and runs one signed noop file request per op
// through the whole path (subscription, admission, audit, engine, signed
// reply, history spool) against an embedded nats-server, one request at a
// time. The requests are signed before the timer starts, so the figures are
// the agent's (plus the broker's routing). cpu-ns/op is the process's user
// and system time per request, steadier than ns/op on a loaded machine.
func BenchmarkSignedNoop(b *testing.B) {
	dir := b.TempDir()
	kp, err := nkeys.CreateUser()
	if err != nil {
		b.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	policy := filepath.Join(dir, "policy.yaml")
	doc := fmt.Sprintf("signers:\n  - name: bench\n    public_key: %s\n    allow: [file]\n    file:\n      paths: [%s/]\n", pub, dir)
	if err := os.WriteFile(policy, []byte(doc), 0o600); err != nil {
		b.Fatal(err)
	}
	br := brokertest.Start(b)
	agentConn, err := nats.Connect(br.ClientURL())
	if err != nil {
		b.Fatal(err)
	}
	defer agentConn.Close()
	nc, err := nats.Connect(br.ClientURL())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	reg, err := providers.Builtin(providers.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ready := make(chan struct{})
	cfg := agent.Config{Identity: "bench-1", Policy: policy, StateDir: filepath.Join(dir, "state")}
	a, err := agent.New(cfg, agentConn, engine.New(reg), map[string]any{"os": "debian"}, agent.WithReady(func() { close(ready) }))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()
	<-ready

	target := filepath.Join(dir, "motd")
	// One subscription for every reply, as the orchestrator's inbox is:
	// a sync subscription per request would allocate and clear a
	// 65,536-slot channel each time, counted in cpu-ns/op as if it were
	// the agent's.
	inboxes := nc.NewInbox()
	replies := make(chan *nats.Msg, 1)
	rsub, err := nc.ChanSubscribe(inboxes+".*", replies)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = rsub.Unsubscribe() }()
	msgs := make([]signedMsg, b.N)
	for i := range msgs {
		req := protocol.NewFleetRequest(fmt.Sprintf("bench-%d-%d", b.N, i), time.Now(), time.Hour)
		req.Noop = true
		if req.Ensure, err = protocol.NewEnsureRequest("file", map[string]any{"name": target, "content": "hello\n", "owner": "root", "group": "root", "mode": "0644"}); err != nil {
			b.Fatal(err)
		}
		inbox := fmt.Sprintf("%s.%d", inboxes, i)
		req.Sender, req.Reply = pub, inbox
		body, err := json.Marshal(req)
		if err != nil {
			b.Fatal(err)
		}
		signer, sig, err := protocol.Sign(body, kp)
		if err != nil {
			b.Fatal(err)
		}
		msgs[i] = signedMsg{inbox: inbox, signer: signer, sig: sig, body: body}
	}
	subject := protocol.RequestNodeSubject("bench-1")
	cpu0 := cpuTime()
	b.ReportAllocs()
	b.ResetTimer()
	for _, s := range msgs {
		m := nats.NewMsg(subject)
		m.Reply, m.Data = s.inbox, s.body
		m.Header.Set(protocol.HeaderSigner, s.signer)
		m.Header.Set(protocol.HeaderSignature, s.sig)
		if err := nc.PublishMsg(m); err != nil {
			b.Fatal(err)
		}
		var got *nats.Msg
		select {
		case got = <-replies:
		case <-time.After(20 * time.Second):
			b.Fatalf("no reply to %s in 20s", s.inbox)
		}
		if got.Subject != s.inbox {
			b.Fatalf("reply on %s, want %s", got.Subject, s.inbox)
		}
		reply, err := protocol.DecodeFleetReply(got.Data, protocol.Limits{})
		if err != nil {
			b.Fatal(err)
		}
		if reply.Error != nil {
			b.Fatalf("request refused: %s: %s", reply.Error.Code, reply.Error.Message)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's user and system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
