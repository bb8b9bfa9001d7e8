package protocol_test

import (
	"errors"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("Discovery requests asking for nested facts", func() {
	request := func(facts string) []byte {
		return []byte(`{"protocol":"io.choria.ccm.v1.fleet.discovery.request","id":"d1","facts":` + facts + `}`)
	}

	It("decodes the facts asked for", func() {
		r, err := protocol.DecodeDiscoveryRequest(request(`["host.info.platformFamily","disks.0.name"]`), protocol.Limits{})
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Facts).To(Equal([]string{"host.info.platformFamily", "disks.0.name"}))
	})

	DescribeTable("refuses what it cannot look up",
		func(facts, want string) {
			_, err := protocol.DecodeDiscoveryRequest(request(facts), protocol.Limits{})
			Expect(errors.Is(err, protocol.ErrBadRequest)).To(BeTrue(), "%v", err)
			Expect(err).To(MatchError(ContainSubstring(want)))
		},
		Entry("an empty segment", `["host..x"]`, `fact name "host..x" has an empty segment`),
		Entry("a character no fact name has", `["host info"]`, `may only contain`),
		Entry("too many", `[`+strings.TrimSuffix(strings.Repeat(`"a",`, protocol.MaxDiscoveryFactPaths+1), ",")+`]`,
			fmt.Sprintf("%d facts, at most %d", protocol.MaxDiscoveryFactPaths+1, protocol.MaxDiscoveryFactPaths)),
	)

	It("omits the member when no fact is asked for, as older agents read requests", func() {
		b, err := protocol.EncodeJSON(protocol.NewDiscoveryRequest("d1", nil))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(b)).NotTo(ContainSubstring("facts"))
	})

	It("announces the facts asked for under their paths, when the host has them", func() {
		all := map[string]any{"os": "debian", "host": map[string]any{"info": map[string]any{"cores": 4}}, "disks": []any{map[string]any{"name": "sda"}}}
		scalar := protocol.ScalarFacts(all)
		req := &protocol.DiscoveryRequest{Facts: []string{"host.info.cores", "disks.0.name", "host.nosuch"}}
		Expect(protocol.AnnouncedFacts(req, scalar, all)).To(Equal(map[string]any{"os": "debian", "host.info.cores": 4, "disks.0.name": "sda"}))
		Expect(scalar).To(Equal(map[string]any{"os": "debian"}), "the scalar facts are not changed")
		Expect(protocol.AnnouncedFacts(&protocol.DiscoveryRequest{}, scalar, all)).To(Equal(scalar))
	})
})
