package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/ccm-fleet/ccm/bench"
)

var agentBin, orchBin, benchBin, brokerBin string

var _ = BeforeSuite(func() {
	var err error
	agentBin, err = gexec.Build("github.com/ccm-fleet/ccm/cmd/ccm-agent")
	Expect(err).ToNot(HaveOccurred())
	orchBin, err = gexec.Build("github.com/ccm-fleet/ccm/cmd/ccm-orch")
	Expect(err).ToNot(HaveOccurred())
	benchBin, err = gexec.Build("github.com/ccm-fleet/ccm/cmd/ccm-bench")
	Expect(err).ToNot(HaveOccurred())
	brokerBin, err = gexec.Build("github.com/ccm-fleet/ccm/cmd/ccm-broker")
	Expect(err).ToNot(HaveOccurred())
	DeferCleanup(gexec.CleanupBuildArtifacts)
})

var _ = Describe("Run", func() {

	It("measures every row on a tiny fleet and writes them as JSON", func() {
		var log bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		rows, err := bench.Run(ctx, bench.Config{
			Sizes: []int{5}, Rounds: 2, RegistrySizes: []int{20}, LatencyRequests: 5, OneHostRounds: 2, IdleWindow: 500 * time.Millisecond,
			AgentBin: agentBin, OrchBin: orchBin, BenchBin: benchBin, WorkDir: GinkgoT().TempDir(), Log: &log,
		})
		Expect(err).ToNot(HaveOccurred(), log.String())

		byName := map[string][]bench.Row{}
		for _, r := range rows {
			byName[r.Name] = append(byName[r.Name], r)
		}
		for _, name := range []string{"floor", "floor-signed", "noop", "noop-cli", "change", "change-cli", "history-write",
			"history-show", "history-show-cli", "agents", "idle", "latency-nats", "latency-ensure", "latency-run",
			"agent-ensure-cli", "registry-discovery", "ui-fleet", "ui-runs"} {
			Expect(byName).To(HaveKey(name))
			for _, r := range byName[name] {
				Expect(r.Rounds).To(BeNumerically(">", 0), name)
				Expect(r.MedianMS).To(BeNumerically(">", 0), name)
				Expect(r.P90MS).To(BeNumerically(">=", r.MedianMS), name)
			}
		}
		Expect(byName["noop"]).To(HaveLen(2)) // registry and broadcast discovery
		Expect(byName["noop"][0].Agents).To(Equal(5))
		Expect(byName["noop"][0].FloorRatio).To(BeNumerically(">", 0))
		Expect(byName["noop"][0].Errors).To(BeZero(), byName["noop"][0].Note)
		for _, name := range []string{"noop", "noop-cli", "change", "change-cli"} {
			for _, r := range byName[name] {
				Expect(r.Replied).To(Equal(5), "%s: every host replied in every round", name)
				Expect(r.Unexpected).To(BeZero(), name)
			}
		}

		// The signed floor: every reply of every round verified.
		Expect(byName["floor-signed"]).To(HaveLen(1))
		signed := byName["floor-signed"][0]
		Expect(signed.Errors).To(BeZero(), signed.Note)
		Expect(signed.Replied).To(Equal(5), "every signed reply verified in every round")
		Expect(signed.FloorRatio).To(BeNumerically(">", 0))
		for _, name := range []string{"noop", "noop-cli", "change", "change-cli"} {
			for _, r := range byName[name] {
				Expect(r.FloorRatio).To(BeNumerically(">", 0), name)
				Expect(r.SignedFloorRatio).To(BeNumerically(">", 0), name)
				Expect(r.SignedFloorRatio).To(BeNumerically("~", r.MedianMS/signed.MedianMS, 0.001), name)
				Expect(r.CentralFloorRatio).To(BeNumerically(">", 0), name)
				Expect(r.CentralSignedFloorRatio).To(BeNumerically(">", 0), name)
			}
		}

		Expect(byName["change"][0].Errors).To(BeZero(), byName["change"][0].Note)
		Expect(byName["noop-cli"][0].PeakRSSMiB).To(BeNumerically(">", 0))
		Expect(byName["agent-ensure-cli"][0].PeakRSSMiB).To(BeNumerically(">", 0))
		Expect(byName["agents"][0].AgentRSSKiB).To(BeNumerically(">", 0))
		Expect(byName["registry-discovery"][0].Agents).To(Equal(20))
		Expect(byName["idle"]).To(HaveLen(1))
		Expect(byName["idle"][0].MedianMS).To(Equal(500.0))
		Expect(byName["idle"][0].Note).To(HavePrefix("at rest for 500ms, no request"))

		out := filepath.Join(GinkgoT().TempDir(), "bench", "results.json")
		Expect(bench.WriteJSON(out, rows)).To(Succeed())
		b, err := os.ReadFile(out)
		Expect(err).ToNot(HaveOccurred())
		var back []map[string]any
		Expect(json.Unmarshal(b, &back)).To(Succeed())
		Expect(back).To(HaveLen(len(rows)))
		Expect(back[0]).To(HaveKey("name"))
		Expect(back[0]).To(HaveKey("agents"))
		Expect(back[0]).To(HaveKey("median_ms"))
		Expect(back[0]).To(HaveKey("p90_ms"))
		for i, r := range rows {
			if r.Name == "noop" {
				Expect(back[i]).To(HaveKeyWithValue("signed_floor_ratio", BeNumerically(">", 0)))
				Expect(back[i]).To(HaveKeyWithValue("central_signed_floor_ratio", BeNumerically(">", 0)))
			}
		}

		var table bytes.Buffer
		bench.PrintTable(&table, rows)
		Expect(table.String()).To(ContainSubstring("noop-cli"))
		Expect(table.String()).To(ContainSubstring("median ms"))
		Expect(table.String()).To(ContainSubstring("floor-signed"))
		Expect(table.String()).To(ContainSubstring("x signed"))
	})

	It("refuses a configuration without binaries or with a bad size", func() {
		_, err := bench.Run(context.Background(), bench.Config{Sizes: []int{5}})
		Expect(err).To(MatchError(ContainSubstring("binaries are required")))
		_, err = bench.Run(context.Background(), bench.Config{Sizes: []int{0}, AgentBin: agentBin, OrchBin: orchBin, BenchBin: benchBin})
		Expect(err).To(MatchError(ContainSubstring("fleet size 0")))
	})
})
