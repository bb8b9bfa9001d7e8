package agent

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/ccm-fleet/ccm/protocol"
)

// semver is the version form NATS micro services must announce, and
// notMeta what may not stand in its build metadata.
var (
	semver  = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)
	notMeta = regexp.MustCompile(`[^0-9A-Za-z-]+`)
)

// serviceVersion is v when it is a semantic version (a leading "v"
// dropped), otherwise 0.0.0 with v as build metadata as far as it fits.
func serviceVersion(v string) string {
	v = strings.TrimPrefix(v, "v")
	if semver.MatchString(v) {
		return v
	}
	meta := strings.Trim(notMeta.ReplaceAllString(v, "-"), "-")
	if meta == "" {
		return "0.0.0"
	}
	return "0.0.0+" + meta
}

// startService registers the agent as the NATS micro service
// protocol.AgentServiceName, so `nats micro ls|info|stats` see the fleet:
// its metadata holds the identity and version, and its one endpoint, on
// protocol.AgentStatsSubject, answers (and its stats carry) the agent's
// request counters. The request subjects and their signing rules are not
// part of it.
//
// Being listed by nats micro is a convenience: a failure is logged and the
// agent serves anyway. stop stops the service (a no-op after a failure).
func startService(nc *nats.Conn, identity, version string, stats func() StatsSnapshot, log *slog.Logger) (stop func()) {
	svc, err := addService(nc, identity, version, stats)
	if err != nil {
		log.Warn("not registered as a NATS micro service", "error", err)
		return func() {}
	}
	return func() { _ = svc.Stop() }
}

// addService adds the micro service and its stats endpoint.
func addService(nc *nats.Conn, identity, version string, stats func() StatsSnapshot) (micro.Service, error) {
	svc, err := micro.AddService(nc, micro.Config{
		Name:        protocol.AgentServiceName,
		Version:     serviceVersion(version),
		Description: "CCM Fleet agent",
		Metadata:    map[string]string{"identity": identity, "version": version},
		StatsHandler: func(*micro.Endpoint) any {
			return stats()
		},
	})
	if err != nil {
		return nil, fmt.Errorf("agent %s: micro service: %w", identity, err)
	}
	err = svc.AddEndpoint("stats", micro.HandlerFunc(func(r micro.Request) {
		b, err := json.Marshal(stats())
		if err != nil {
			_ = r.Error("500", err.Error(), nil)
			return
		}
		_ = r.Respond(b)
	}), micro.WithEndpointSubject(protocol.AgentStatsSubject(identity)), micro.WithEndpointQueueGroupDisabled())
	if err != nil {
		_ = svc.Stop()
		return nil, fmt.Errorf("agent %s: micro service endpoint: %w", identity, err)
	}
	return svc, nil
}
