package orchestrator

import (
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("registryView.fallback", func() {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	one := []Node{{Identity: "web1"}}
	DescribeTable("says when auto discovery must broadcast",
		func(v registryView, err error, want string) {
			Expect(v.fallback(err, now)).To(Equal(want))
		},
		Entry("a fresh registry with a match answers", registryView{nodes: one, entries: 3, newest: now.Add(-10 * time.Second), ttl: 90 * time.Second}, nil, ""),
		Entry("an unknown TTL never counts as stale", registryView{nodes: one, entries: 1, newest: now.Add(-time.Hour)}, nil, ""),
		Entry("a read failure", registryView{}, errors.New("no node registry CCM_NODES: timeout"), "the node registry could not be read (no node registry CCM_NODES: timeout)"),
		Entry("an empty registry", registryView{ttl: 90 * time.Second}, nil, "the node registry is empty"),
		Entry("no entry matches", registryView{entries: 7, newest: now, ttl: 90 * time.Second}, nil, "no node registry entry matches the filter (of 7 entries)"),
		Entry("the newest entry is older than half the TTL", registryView{nodes: one, entries: 1, newest: now.Add(-46 * time.Second), ttl: 90 * time.Second}, nil,
			"the node registry is stale: its newest entry was refreshed 46s ago, more than half its 1m30s TTL"),
	)

	It("expects the registry's hosts that did not answer the broadcast, keeping their keys", func() {
		got := mergeNodes([]Node{{Identity: "b"}, {Identity: "c", PublicKey: "kc"}}, []Node{{Identity: "a", PublicKey: "ka"}, {Identity: "b", PublicKey: "kb"}})
		Expect(got).To(Equal([]Node{{Identity: "a", PublicKey: "ka"}, {Identity: "b", PublicKey: "kb"}, {Identity: "c", PublicKey: "kc"}}))
	})
})
