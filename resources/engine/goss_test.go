package engine_test

import (
	"context"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/catalog"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// countingGoss passes every validation and counts them.
type countingGoss struct{ runs atomic.Int32 }

func (c *countingGoss) RunGoss(context.Context, []byte, time.Duration) (engine.GossOutput, error) {
	c.runs.Add(1)
	return engine.GossOutput{Tests: 1, Summary: "Count: 1, Failed: 0"}, nil
}

var _ = Describe("Goss health checks", func() {
	var (
		goss *countingGoss
		reg  *resources.Registry
		env  = templates.New(map[string]any{}, nil)
	)
	BeforeEach(func() {
		goss = &countingGoss{}
		reg = resources.NewRegistry()
		Expect(reg.RegisterType(&probeType{})).To(Succeed())
		n := 0
		Expect(reg.RegisterProvider(probeFactory{name: "probe", manage: true, instances: &n})).To(Succeed())
	})
	ensure := func(eng *engine.Engine, rules map[string]any) (*protocol.TransactionEvent, error) {
		return eng.Ensure(context.Background(), engine.RunOptions{Env: env}, engine.Spec{Type: "file", Properties: map[string]any{
			"name": "/tmp/x", "health_checks": []any{map[string]any{"goss_rules": rules}}}})
	}
	declarable := map[string]any{"file": map[string]any{"/etc/hostname": map[string]any{"exists": true}}}
	undeclarable := map[string]any{"kernel-param": map[string]any{"kernel.pid_max": map[string]any{"value": "1"}}}

	It("on a scoped engine (the fleet agent's) runs rules the catalog declares and refuses, by key, the others before anything runs", func() {
		eng := engine.New(reg, engine.WithScopedGoss(goss))
		ev, err := ensure(eng, declarable)
		Expect(err).ToNot(HaveOccurred())
		Expect(ev.HealthChecks).To(HaveLen(1))
		Expect(ev.HealthChecks[0].Status).To(Equal(protocol.HealthOK))
		Expect(goss.runs.Load()).To(BeEquivalentTo(1))

		_, err = ensure(eng, undeclarable)
		Expect(err).To(MatchError(resources.ErrForbidden))
		Expect(err).To(MatchError(catalog.ErrUndeclarable))
		Expect(err).To(MatchError(ContainSubstring(`property health_checks[0].goss_rules: key "kernel-param"`)))
		Expect(goss.runs.Load()).To(BeEquivalentTo(1), "nothing ran")
	})

	It("on a local engine runs any rules, and on an engine with no goss runner refuses them all", func() {
		_, err := ensure(engine.New(reg, engine.WithGossRunner(goss)), undeclarable)
		Expect(err).ToNot(HaveOccurred())
		Expect(goss.runs.Load()).To(BeEquivalentTo(1))

		_, err = ensure(engine.New(reg), declarable)
		Expect(err).To(MatchError(engine.ErrGossRefused))
		Expect(goss.runs.Load()).To(BeEquivalentTo(1))
	})
})
