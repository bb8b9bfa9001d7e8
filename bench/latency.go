package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/natsconn"
	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/protocol"
)

// requestTimeout bounds one single request of the latency rows.
const requestTimeout = 10 * time.Second

// latencyWarmup is how many untimed requests precede the timed ones.
const latencyWarmup = 50

// latency times single requests one after the other: a bare NATS request
// to one plain responder, one fleet ensure request to one warm agent (its
// round trip: encode, send, the agent's whole work, reply, decode), and
// one orchestrator run on one named host (which also records the request
// in history).
func (b *bencher) latency(ctx context.Context) ([]Row, error) {
	s, dir, err := b.openSite(ctx, "latency", 0, 1)
	if err != nil {
		return nil, err
	}
	defer s.stop()

	b.logf("latency: bare NATS request")
	resp, err := b.startResponders(ctx, s, 1)
	if err != nil {
		return nil, err
	}
	request := make([]byte, b.requestBytes)
	bare := Row{Name: "latency-nats", Agents: 1}
	got, err := b.timeRequests(func(int) error {
		_, err := s.nc.Request(floorSubject, request, requestTimeout)
		return err
	})
	resp.stop(stopTimeout)
	if err != nil {
		return nil, fmt.Errorf("latency-nats: %w", err)
	}
	got.stats(&bare)
	rows := []Row{bare}

	b.logf("latency: one agent")
	agents, err := b.startAgents(ctx, s, dir, 1)
	if err != nil {
		return rows, err
	}
	defer agents.stop(stopTimeout)
	id := agent.SimulatedIdentity("sim", 0)
	files := filepath.Join(dir, "files")
	if err := os.MkdirAll(filepath.Join(files, id), 0o755); err != nil {
		return rows, err
	}
	spec := b.fileSpec(files, "managed by the bench\n")
	client := b.sign.client(s.nc)
	req, err := spec.request(false, orchestrator.DiscoveryRegistry)
	if err != nil {
		return rows, err
	}
	req.Hosts = []string{id}
	if res, err := client.Run(ctx, req); err != nil || res.Summary.Hosts.Failed+res.Summary.Hosts.NoReply > 0 {
		return rows, fmt.Errorf("latency setup: %v", err)
	}

	ens, err := protocol.NewEnsureRequest("file", spec.properties())
	if err != nil {
		return rows, err
	}
	one := Row{Name: "latency-ensure", Agents: 1, Note: "one signed noop ensure on a warm agent: request, the agent's checks and work, reply"}
	// The reply subject is part of what is signed, so the requests use
	// an inbox of their own rather than nc.Request's.
	inbox := s.nc.NewRespInbox()
	replies, err := s.nc.SubscribeSync(inbox)
	if err != nil {
		return rows, fmt.Errorf("latency-ensure: %w", err)
	}
	defer func() { _ = replies.Unsubscribe() }()
	got, err = b.timeRequests(func(i int) error {
		fr := protocol.NewFleetRequest("benchlatency"+strconv.Itoa(i), time.Now(), time.Minute)
		fr.Noop, fr.Targets, fr.Ensure = true, []string{id}, ens
		fr.Sender, fr.Reply = b.sign.signer.PublicKey(), inbox
		data, err := json.Marshal(fr)
		if err != nil {
			return err
		}
		msg := natsconn.NewMsg(protocol.RequestNodeSubject(id), inbox, b.sign.signer.Header(data), data)
		if err := s.nc.PublishMsg(msg); err != nil {
			return err
		}
		m, err := replies.NextMsg(requestTimeout)
		if err != nil {
			return err
		}
		r, err := protocol.DecodeFleetReply(m.Data, protocol.Limits{})
		switch {
		case err != nil:
			return err
		case r.Error != nil || len(r.Events) != 1 || r.Events[0].Failed || r.Events[0].Changed:
			return fmt.Errorf("unexpected reply %s", m.Data)
		}
		return nil
	})
	if err != nil {
		return rows, fmt.Errorf("latency-ensure: %w", err)
	}
	got.stats(&one)
	rows = append(rows, one)

	viaRun := Row{Name: "latency-run", Agents: 1, Note: "orchestrator run on one named host, recording the request in history"}
	req.Noop = true
	got, err = b.timeRequests(func(int) error {
		res, err := client.Run(ctx, req)
		if err == nil && res.Summary.Hosts.OK != 1 {
			err = fmt.Errorf("unexpected result %+v", res.Summary)
		}
		return err
	})
	if err != nil {
		return rows, fmt.Errorf("latency-run: %w", err)
	}
	got.stats(&viaRun)
	return append(rows, viaRun), nil
}

// timeRequests times LatencyRequests calls of fn after a few untimed ones.
func (b *bencher) timeRequests(fn func(i int) error) (samples, error) {
	got := make(samples, 0, b.cfg.LatencyRequests)
	for i := range latencyWarmup + b.cfg.LatencyRequests {
		start := time.Now()
		if err := fn(i); err != nil {
			return nil, err
		}
		if i >= latencyWarmup {
			got = append(got, time.Since(start))
		}
	}
	return got, nil
}

// oneHost times ccm-agent ensure file as a whole process: a cold start
// that gathers facts, applies one file resource (already in its state)
// and prints the outcome.
func (b *bencher) oneHost(ctx context.Context) ([]Row, error) {
	dir, err := b.dir("one-host")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	b.logf("one host: ccm-agent ensure file")
	args := []string{"ensure", "file", filepath.Join(dir, "motd"), "--content", "managed by the bench\n",
		"--owner", b.owner, "--group", b.group, "--mode", "0644"}
	row := Row{Name: "agent-ensure-cli", Agents: 1, Note: "ccm-agent ensure file as a whole process, the file already as asked"}
	var runs processRuns
	for i := range b.cfg.OneHostRounds + 1 {
		r, err := runProcess(ctx, os.Environ(), b.cfg.AgentBin, args...)
		if err != nil {
			return nil, err
		}
		if r.code != 0 {
			return nil, fmt.Errorf("ccm-agent ensure exited %d: %s", r.code, r.errText)
		}
		if i > 0 { // the first run creates the file
			runs.add(r)
		}
	}
	runs.fill(&row)
	return []Row{row}, nil
}
