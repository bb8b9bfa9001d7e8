package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/protocol"
)

// A hub's history stream and registry source every site. When a site comes
// back after an outage, nats-server retries the source on its own backoff:
// an outstanding consumer request waits up to 30 s and each failed one adds
// 10 s more, up to 2 minutes (server/stream.go: srcConsumerWaitTime,
// calculateRetryBackoff). It resets that backoff when a leaf node connects,
// but only on the server the site connected to and only for the streams it
// leads, and not while a request is outstanding (checkInternalSyncConsumers,
// retryDisconnectedSyncConsumers in server/leafnode.go and stream.go). A
// stream's new leader sets its sources up afresh, from the last sequence
// sourced, so the leader of a replicated stream whose source is stalled
// while the site's JetStream answers steps down: the next leader resumes
// the site's records at once, exactly once.
const (
	// sourcingCheckInterval is how often the leader looks at its sources.
	sourcingCheckInterval = 2 * time.Second
	// sourceStalledAfter is how long without a message or heartbeat (the
	// source consumer's heartbeat is 1 s) makes a source stalled.
	sourceStalledAfter = 5 * time.Second
	// stalledChecksBeforeStepDown is how many checks in a row must find a
	// source stalled while its site answers before the leader steps down:
	// a source being set up has the time to finish.
	stalledChecksBeforeStepDown = 2
	// sourcingRequestTimeout bounds one stream info, site probe or step
	// down request.
	sourcingRequestTimeout = 2 * time.Second
	// stepDownAgainAfter is how long a broker waits before it steps down
	// again for a source it has not seen healthy since (nats-server's own
	// longest backoff): a source that stays broken moves the leader at most
	// once per hub broker in that time.
	stepDownAgainAfter = 2 * time.Minute
)

// sourcedStreams are the hub's streams that source the sites.
var sourcedStreams = []string{protocol.HistoryStream, "KV_" + protocol.NodesBucket}

// sourcingWatch resumes stalled sourcing on a hub whose streams are
// replicated; see the comment above.
type sourcingWatch struct {
	nc   *nats.Conn
	js   jetstream.JetStream
	self string // this broker's server name
	log  func(text, msg string, args ...any)

	// stalled counts the checks in a row that found stream's source of
	// site stalled while the site answered, by stream and site.
	stalled map[string]int
	// steppedDown is when this broker last stepped down for a source, by
	// stream and site, until it sees the source healthy.
	steppedDown map[string]time.Time
}

// watchSourcing runs a sourcingWatch on b, whose server is named self,
// until ctx ends.
func (a *app) watchSourcing(ctx context.Context, b *broker.Broker, self string) {
	nc, js, ok := a.inProcessJS(b, "cannot watch the sourcing of the sites")
	if !ok {
		return
	}
	defer nc.Close()
	w := &sourcingWatch{nc: nc, js: js, self: self, stalled: map[string]int{}, steppedDown: map[string]time.Time{},
		log: func(text, msg string, args ...any) { a.announce(a.Stderr, text, msg, args...) }}
	w.run(ctx)
}

// run checks every sourcingCheckInterval until ctx ends.
func (w *sourcingWatch) run(ctx context.Context) {
	t := time.NewTicker(sourcingCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for _, name := range sourcedStreams {
				w.check(ctx, name)
			}
		}
	}
}

// check looks at stream name's sources when this broker leads it, and
// steps down when one has stalled long enough while its site answers.
func (w *sourcingWatch) check(ctx context.Context, name string) {
	cctx, cancel := context.WithTimeout(ctx, sourcingRequestTimeout)
	defer cancel()
	s, err := w.js.Stream(cctx, name)
	if err != nil {
		return
	}
	info := s.CachedInfo()
	if info.Cluster == nil || info.Cluster.Leader != w.self || info.Config.Replicas < 2 {
		w.forget(name)
		return
	}
	for _, src := range info.Sources {
		site := sourceDomain(src)
		if site == "" {
			continue
		}
		key := name + " " + site
		if src.Active >= 0 && src.Active < sourceStalledAfter {
			delete(w.stalled, key)
			delete(w.steppedDown, key)
			continue
		}
		if time.Since(w.steppedDown[key]) < stepDownAgainAfter || !w.siteAnswers(ctx, site, name) {
			delete(w.stalled, key)
			continue
		}
		w.stalled[key]++
		if w.stalled[key] < stalledChecksBeforeStepDown {
			continue
		}
		delete(w.stalled, key)
		w.steppedDown[key] = time.Now()
		if err := w.stepDown(ctx, name); err != nil {
			w.log(fmt.Sprintf("sourcing of site %s into %s stalled while the site answers; the leader could not step down: %v", site, name, err),
				"sourcing stalled, step down failed", "site", site, "stream", name, "error", err)
			return
		}
		w.log(fmt.Sprintf("sourcing of site %s into %s stalled while the site answers: this broker, the stream's leader, stepped down so that the next leader resumes it at once", site, name),
			"sourcing stalled, leader stepped down", "site", site, "stream", name)
		return // no longer the leader
	}
}

// forget drops the counts of stream name, which this broker does not lead.
func (w *sourcingWatch) forget(name string) {
	for k := range w.stalled {
		if strings.HasPrefix(k, name+" ") {
			delete(w.stalled, k)
		}
	}
}

// siteAnswers reports whether site's JetStream answers for stream name
// through the hub: the source could be set up now.
func (w *sourcingWatch) siteAnswers(ctx context.Context, site, name string) bool {
	js, err := jetstream.NewWithDomain(w.nc, site)
	if err != nil {
		return false
	}
	pctx, cancel := context.WithTimeout(ctx, sourcingRequestTimeout)
	defer cancel()
	_, err = js.Stream(pctx, name)
	return err == nil
}

// stepDown asks stream name's leader (this broker) to step down.
func (w *sourcingWatch) stepDown(ctx context.Context, name string) error {
	rctx, cancel := context.WithTimeout(ctx, sourcingRequestTimeout)
	defer cancel()
	m, err := w.nc.RequestWithContext(rctx, "$JS.API.STREAM.LEADER.STEPDOWN."+name, nil)
	if err != nil {
		return err
	}
	var resp struct {
		Success bool `json:"success"`
		Error   *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return err
	}
	if resp.Error != nil {
		return fmt.Errorf("%s", resp.Error.Description)
	}
	if !resp.Success {
		return fmt.Errorf("not done")
	}
	return nil
}

// sourceDomain is the JetStream domain a source reads from ("$JS.<domain>.API"
// is its API prefix), or "" when it is not a domain's.
func sourceDomain(src *jetstream.StreamSourceInfo) string {
	if src == nil || src.External == nil {
		return ""
	}
	p := src.External.APIPrefix
	if !strings.HasPrefix(p, "$JS.") || !strings.HasSuffix(p, ".API") {
		return ""
	}
	return strings.TrimSuffix(strings.TrimPrefix(p, "$JS."), ".API")
}
