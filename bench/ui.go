package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/ui"
)

// UI bench sizes: the fleet page over uiHosts registry entries and the
// runs page over uiRuns runs of uiRunHosts hosts each.
const (
	uiHosts    = 5000
	uiRuns     = 1000
	uiRunHosts = 20
)

// uiRows times the dashboard's fleet and runs pages (a GET each, over
// loopback HTTP, rendered from what the dashboard follows) with a registry
// of uiHosts entries and a history of uiRuns runs.
func (b *bencher) uiRows(ctx context.Context) ([]Row, error) {
	s, _, err := b.openSite(ctx, "ui", registryTTL, 1)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	b.logf("ui: %d registry entries, %d runs of %d hosts", uiHosts, uiRuns, uiRunHosts)
	now := time.Now().UTC()
	ids, err := b.writeRegistry(s, 0, uiHosts, []agent.Vary{{Key: "role", Values: []string{"web", "db", "cache"}}})
	if err != nil {
		return nil, err
	}
	for r := range uiRuns {
		id := fmt.Sprintf("uibench%012d", r)
		created := now.Add(time.Duration(r-uiRuns) * time.Minute)
		hosts := make([]string, uiRunHosts)
		for h := range hosts {
			hosts[h] = ids[(r*uiRunHosts+h)%len(ids)]
		}
		ens, err := protocol.NewEnsureRequest("file", map[string]any{"name": "/etc/motd", "content": "hi", "owner": "root", "group": "root", "mode": "0644"})
		if err != nil {
			return nil, err
		}
		req := protocol.HistoryRequest{Protocol: protocol.HistoryRequestProtocol, RequestID: id, Created: created, Noop: r%2 == 1,
			Discovery: protocol.DiscoveryRegistry, Expected: hosts, Timeout: protocol.Duration(10 * time.Second), TTL: protocol.Duration(time.Minute), Ensure: ens}
		if err := b.publishJSON(s, protocol.HistoryRequestSubject(id), &req); err != nil {
			return nil, err
		}
		for _, h := range hosts {
			reply := protocol.NewFleetReply(id, h, created)
			ev := protocol.NewTransactionEvent(id+"-"+h, "file", "/etc/motd", "")
			ev.Provider, ev.RequestedEnsure, ev.FinalEnsure, ev.Noop, ev.Changed = "posix", "present", "present", req.Noop, r%3 == 0
			reply.Events = append(reply.Events, ev)
			if err := b.publishJSON(s, protocol.HistorySubject(id, h), reply); err != nil {
				return nil, err
			}
		}
	}
	select {
	case <-s.js.PublishAsyncComplete():
	case <-time.After(s.dl.start):
		return nil, fmt.Errorf("ui: writing the registry and history timed out")
	}

	srv, err := ui.New(s.nc, ui.Options{})
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { srv.Run(rctx); close(done) }()
	defer func() { cancel(); <-done }()
	web := httptest.NewServer(srv)
	defer web.Close()
	deadline := time.Now().Add(s.dl.start)
	for {
		hosts, runs := srv.Counts()
		if hosts == uiHosts && runs == uiRuns {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("ui: the dashboard holds %d hosts and %d runs, want %d and %d", hosts, runs, uiHosts, uiRuns)
		}
		time.Sleep(50 * time.Millisecond)
	}

	var rows []Row
	for _, page := range []struct{ name, path, note string }{
		{"ui-fleet", "/", "dashboard fleet page (first 100 of " + strconv.Itoa(uiHosts) + " hosts, counts over all), GET over loopback"},
		{"ui-runs", "/runs", "dashboard runs page (50 newest of " + strconv.Itoa(uiRuns) + " runs of " + strconv.Itoa(uiRunHosts) + " hosts), GET over loopback"},
	} {
		row := Row{Name: page.name, Agents: uiHosts, Note: page.note}
		if page.name == "ui-runs" {
			row.Agents = uiRuns
		}
		var got samples
		cpu0 := selfCPU()
		for i := range b.cfg.Rounds + 1 {
			start := time.Now()
			resp, err := http.Get(web.URL + page.path)
			if err != nil {
				return rows, fmt.Errorf("ui %s: %w", page.path, err)
			}
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			d := time.Since(start)
			if resp.StatusCode != http.StatusOK || n == 0 {
				row.Errors++
				continue
			}
			if i > 0 {
				got = append(got, d)
			}
		}
		got.stats(&row)
		row.BenchCPUSeconds = round3((selfCPU() - cpu0).Seconds() / float64(b.cfg.Rounds+1))
		rows = append(rows, row)
	}
	return rows, nil
}
