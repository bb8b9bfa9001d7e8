package bench_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/bench"
)

var _ = Describe("A fleet too large for one process's open files", func() {
	It("is spread over agent processes and a cluster of brokers, with exact accounting", func() {
		var log bytes.Buffer
		// 300 open files (room for 64 connections each): 30 agents need 3
		// agent processes (6 files each), and 2 brokers, made 3 (a
		// cluster's majority). The agents and responders run niced, and
		// every process writes its CPU profile.
		profiles := GinkgoT().TempDir()
		rows, err := bench.Run(context.Background(), bench.Config{
			Sizes: []int{30}, Rounds: 2, Rows: []string{"floor", "floor-signed", "noop", "noop-cli", "agents"}, MaxOpenFiles: 300,
			AgentBin: agentBin, OrchBin: orchBin, BenchBin: benchBin, BrokerBin: brokerBin, WorkDir: GinkgoT().TempDir(), Log: &log,
			Nice: 5, ProfileDir: profiles,
		})
		Expect(err).ToNot(HaveOccurred(), log.String())
		byName := map[string][]bench.Row{}
		for _, r := range rows {
			byName[r.Name] = append(byName[r.Name], r)
		}
		Expect(byName["floor"]).To(HaveLen(1))
		// The signed floor's responders are spread like the floor's, and
		// every reply from every process verified.
		Expect(byName["floor-signed"]).To(HaveLen(1))
		Expect(byName["floor-signed"][0].Errors).To(BeZero(), byName["floor-signed"][0].Note)
		Expect(byName["floor-signed"][0].Replied).To(Equal(30))
		for _, name := range []string{"noop", "noop-cli"} {
			Expect(byName[name]).ToNot(BeEmpty(), name)
			for _, r := range byName[name] {
				Expect(r.Errors).To(BeZero(), r.Note)
				Expect(r.Replied).To(Equal(30), name)
				Expect(r.Unexpected).To(BeZero(), name)
				Expect(r.SignedFloorRatio).To(BeNumerically(">", 0), name)
			}
		}
		Expect(byName["agents"][0].AgentsRSSMiB).To(BeNumerically(">", 0))
		// Every process's peak: this one, the 2 other brokers and the 3
		// agent processes.
		peaks := byName["agents"][0].Peaks
		Expect(peaks).To(HaveLen(6))
		for _, p := range peaks {
			Expect(p.PeakMiB).To(BeNumerically(">", 1), p.Name)
		}
		Expect(peaks[5].Name).To(ContainSubstring("simulated agents"))
		Expect(log.String()).To(ContainSubstring("3 agent processes"))
		Expect(log.String()).To(ContainSubstring("3 brokers"))
		// The other two brokers wrote their profiles as they stopped.
		for _, name := range []string{"fleet-30-broker-2.pprof", "fleet-30-broker-3.pprof", "agents-30-1.pprof"} {
			info, err := os.Stat(filepath.Join(profiles, name))
			Expect(err).ToNot(HaveOccurred())
			Expect(info.Size()).To(BeNumerically(">", 0), name)
		}
	})
})
