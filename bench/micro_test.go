package bench_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// The benchmarks of this file time the steps of one request on its own
// (go test -run XXX -bench . ./bench): what an agent does with a fleet
// request (decode, engine, encode the reply) and what the orchestrator does
// with a reply or a registry entry. ccm-bench measures the whole.

// microFixture is a fleet noop request for a templated file, and one
// host's reply to it, made by the code the agents use.
type microFixture struct {
	request, reply []byte
	eng            *engine.Engine
	facts          map[string]any
	props          map[string]any
	ens            *protocol.EnsureRequest
}

func newMicroFixture(b *testing.B) *microFixture {
	b.Helper()
	dir := b.TempDir()
	props := map[string]any{"name": filepath.Join(dir, "{{ lookup('facts.identity') }}"), "content": "managed by the bench\n",
		"owner": "root", "group": "root", "mode": "0644"}
	ens, err := protocol.NewEnsureRequest("file", props)
	if err != nil {
		b.Fatal(err)
	}
	fr := protocol.NewFleetRequest("abcdefghij0123456789", time.Now(), time.Minute)
	fr.Noop, fr.Ensure = true, ens
	req, err := json.Marshal(fr)
	if err != nil {
		b.Fatal(err)
	}
	reg, err := providers.Builtin(providers.Options{})
	if err != nil {
		b.Fatal(err)
	}
	f := &microFixture{request: req, eng: engine.New(reg), facts: agent.SimulatedFacts(0, "sim", map[string]any{"simulated": true}, nil), ens: ens}
	f.props, _ = ens.PropertiesMap()
	var ev *protocol.TransactionEvent
	for _, noop := range []bool{false, true} {
		ev, err = f.eng.Ensure(context.Background(), engine.RunOptions{Noop: noop, Env: templates.New(f.facts, nil)}, engine.Spec{Type: "file", Properties: f.props})
		if err != nil {
			b.Fatal(err)
		}
	}
	reply := protocol.NewFleetReply(fr.ID, "sim-0001", time.Now())
	reply.Events = append(reply.Events, ev)
	if f.reply, err = json.Marshal(reply); err != nil {
		b.Fatal(err)
	}
	return f
}

func BenchmarkDecodeFleetRequest(b *testing.B) {
	f := newMicroFixture(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := protocol.DecodeFleetRequest(f.request, protocol.Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEngineEnsureNoop(b *testing.B) {
	f := newMicroFixture(b)
	b.ReportAllocs()
	for b.Loop() {
		props, _ := f.ens.PropertiesMap()
		if _, err := f.eng.Ensure(context.Background(), engine.RunOptions{Noop: true, Env: templates.New(f.facts, nil)}, engine.Spec{Type: "file", Properties: props}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeFleetReply(b *testing.B) {
	f := newMicroFixture(b)
	r, err := protocol.DecodeFleetReply(f.reply, protocol.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Encode(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeFleetReply(b *testing.B) {
	f := newMicroFixture(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := protocol.DecodeFleetReply(f.reply, protocol.Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeNodeRecord(b *testing.B) {
	facts := agent.SimulatedFacts(7, "node", map[string]any{"os": "debian", "platform": "debian", "platform_version": "12.7", "kernel": "linux",
		"arch": "amd64", "cpus": 4, "memory_mb": 8192, "virtualization": "kvm", "role": "web"}, nil)
	data, err := json.Marshal(&protocol.NodeRecord{Protocol: protocol.NodeProtocol, Identity: facts["identity"].(string), Facts: protocol.ScalarFacts(facts),
		Version: "bench", Started: time.Now(), LastSeen: time.Now()})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := protocol.DecodeNodeRecord(data, protocol.Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}
