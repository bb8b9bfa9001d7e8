package bench

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ccm-fleet/ccm/natsconn"
	"github.com/ccm-fleet/ccm/protocol"
)

// The signed floor is the floor with the fleet's crypto and nothing else:
// the request is the fleet noop request's body with the signature headers
// the orchestrator puts on it; each responder (a key of its own, like an
// agent) verifies that signature with protocol.Verify and signs its reply
// with protocol.KeySigner; the requester verifies every reply with
// protocol.Verify on every core, as the orchestrator's inbox does. It is
// the limit of any protocol that signs both ways, and it follows whatever
// those functions cost: a faster implementation behind them moves it too.

// signedFloorSubject is what the signed floor's responders listen on.
const signedFloorSubject = "bench.floor.signed"

// floorSigned times the signed floor over n responders.
func (b *bencher) floorSigned(ctx context.Context, s *site, n int) (Row, error) {
	row := Row{Name: "floor-signed", Agents: n}
	resp, err := b.startSignedResponders(ctx, s, n)
	if err != nil {
		return row, err
	}
	defer resp.stop(stopTimeout)
	var got samples
	cpu0 := s.centralCPU()
	agentsCPU0 := resp.cpu()
	row.Replied = -1
	for i := range b.cfg.Rounds + 1 {
		r, err := s.signedFloorRound(ctx, b.sign.signer, b.requestBody, n)
		if err != nil {
			return row, err
		}
		if i == 0 { // the first round warms up
			continue
		}
		if row.Replied < 0 || r.verified < row.Replied {
			row.Replied = r.verified
		}
		if r.unverified > 0 {
			row.Errors++
			row.Note = fmt.Sprintf("%d of %d replies did not verify", r.unverified, n)
			continue
		}
		got = append(got, r.wall)
	}
	row.Replied = max(row.Replied, 0)
	got.stats(&row)
	row.BenchCPUSeconds = round3((s.centralCPU() - cpu0).Seconds() / float64(b.cfg.Rounds+1))
	row.AgentsCPUSeconds = round3((resp.cpu() - agentsCPU0).Seconds() / float64(b.cfg.Rounds+1))
	return row, nil
}

// startSignedResponders starts the signed floor's n responders, trusting
// the bench's key, with replies whose body and headers together are as
// large as an agent's reply.
func (b *bencher) startSignedResponders(ctx context.Context, s *site, n int) (procs, error) {
	var names []string
	var args [][]string
	for i, count := range parts(n, layoutFor(n, b.fdLimit).responderProcs) {
		names = append(names, fmt.Sprintf("%d signed floor responders", count))
		args = append(args, []string{RespondersCommand, "--server", s.urls[i%len(s.urls)], "--count", strconv.Itoa(count),
			"--subject", signedFloorSubject, "--reply-bytes", strconv.Itoa(b.replyBodyBytes), "--trust", b.sign.signer.PublicKey()})
	}
	bin, args := niced(b.cfg.Nice, b.cfg.BenchBin, args)
	return startAll(ctx, deadlinesFor(n).start, bin, respondersReady, names, args)
}

// signedRound is one signed floor round: the time from signing the
// request to the n-th reply checked, and how many replies verified.
type signedRound struct {
	wall                 time.Duration
	verified, unverified int
}

// signedFloorRound signs body with keys, publishes it to the signed
// floor's responders and verifies their replies until n have arrived.
func (s *site) signedFloorRound(ctx context.Context, keys *protocol.KeySigner, body []byte, n int) (signedRound, error) {
	inbox := s.nc.NewInbox()
	// The subscription hands each reply to the verifiers; it never
	// blocks, as the channel holds every reply expected (a reply beyond
	// those cannot change the round's outcome and is dropped).
	raw := make(chan *nats.Msg, n)
	sub, err := s.nc.Subscribe(inbox, func(m *nats.Msg) {
		select {
		case raw <- m:
		default:
		}
	})
	if err != nil {
		return signedRound{}, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		return signedRound{}, err
	}
	if err := s.nc.Flush(); err != nil {
		return signedRound{}, err
	}

	var (
		mu    sync.Mutex // guards r and done's closing
		r     signedRound
		done  = make(chan struct{})
		stop  = make(chan struct{})
		check sync.WaitGroup
	)
	defer func() {
		close(stop)
		check.Wait()
	}()
	// Replies are verified on every core, as the orchestrator's inbox
	// verifies them.
	for range max(1, runtime.GOMAXPROCS(0)) {
		check.Go(func() {
			for {
				select {
				case m := <-raw:
					ok := protocol.Verify(m.Data, m.Header.Get(protocol.HeaderSigner), m.Header.Get(protocol.HeaderSignature)) == nil
					mu.Lock()
					if ok {
						r.verified++
					} else {
						r.unverified++
					}
					if r.verified+r.unverified == n {
						close(done)
					}
					mu.Unlock()
				case <-stop:
					return
				}
			}
		})
	}

	start := time.Now()
	msg := natsconn.NewMsg(signedFloorSubject, inbox, nats.Header(keys.Header(body)), body)
	if err := s.nc.PublishMsg(msg); err != nil {
		return signedRound{}, err
	}
	t := time.NewTimer(s.dl.round)
	defer t.Stop()
	select {
	case <-done:
		mu.Lock()
		defer mu.Unlock()
		r.wall = time.Since(start)
		return r, nil
	case <-t.C:
		mu.Lock()
		defer mu.Unlock()
		return r, fmt.Errorf("signed floor: %d of %d replies after %s (%d did not verify)", r.verified+r.unverified, n, s.dl.round, r.unverified)
	case <-ctx.Done():
		return signedRound{}, ctx.Err()
	}
}
