package policy_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/templates"
	"github.com/ccm-fleet/ccm/trust/policy"
)

// BenchmarkEnsureBody is what an agent does with an ensure request's
// properties from its bytes to the value it runs: parse the body (the
// policy's view), then Prepare it. It reports the strict decodes per run.
func BenchmarkEnsureBody(b *testing.B) {
	reg, err := providers.Builtin(providers.Options{})
	if err != nil {
		b.Fatal(err)
	}
	raw, err := json.Marshal(map[string]any{"name": "/etc/motd", "ensure": "present", "content": "hello\n", "owner": "root", "group": "root", "mode": "0644"})
	if err != nil {
		b.Fatal(err)
	}
	req := protocol.NewFleetRequest("bench", time.Now(), time.Minute)
	req.Ensure = &protocol.EnsureRequest{Protocol: protocol.EnsureRequestProtocol, Type: "file", Properties: raw}
	eng := engine.New(reg)
	env := templates.New(nil, nil)
	b.ReportAllocs()
	before := protocol.Decodes()
	for b.Loop() {
		body, err := policy.ParseBody(req, reg)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := eng.NewSession(engine.RunOptions{Noop: true, Env: env}).Prepare(*body.Ensure); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(protocol.Decodes()-before)/float64(b.N), "decodes/op")
}
