package jsstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("The node registry under churn", func() {
	// Agents refresh their entries all the time; a listing must still give
	// every entry that existed when it began. The watch's own end-of-data
	// marker can come early under concurrent writes (seen at 20,000 agents:
	// 3 hosts left out of discovery).
	It("lists every entry while entries are rewritten concurrently", func() {
		js := newJS()
		ctx := context.Background()
		kv, err := jsstore.OpenRegistry(ctx, js, jsstore.RegistryConfig{})
		Expect(err).ToNot(HaveOccurred())
		const n = 3000
		value := func(i int) []byte {
			b, _ := json.Marshal(&protocol.NodeRecord{Protocol: protocol.NodeProtocol, Identity: fmt.Sprintf("h%05d", i), Facts: map[string]any{"os": "debian"}})
			return b
		}
		for i := range n {
			_, err := kv.Put(ctx, fmt.Sprintf("h%05d", i), value(i))
			Expect(err).ToNot(HaveOccurred())
		}
		stop := make(chan struct{})
		var writers sync.WaitGroup
		for w := range 4 {
			writers.Go(func() {
				for i := w; ; i = (i + 4) % n {
					select {
					case <-stop:
						return
					default:
					}
					_, _ = kv.Put(ctx, fmt.Sprintf("h%05d", i), value(i))
				}
			})
		}
		defer func() { close(stop); writers.Wait() }()
		for range 15 {
			nodes, malformed, err := jsstore.ListNodes(ctx, js, kv)
			Expect(err).ToNot(HaveOccurred())
			Expect(malformed).To(BeZero())
			Expect(nodes).To(HaveLen(n))
			ids := map[string]bool{}
			for _, r := range nodes {
				ids[r.Identity] = true
			}
			Expect(ids).To(HaveLen(n), "each entry once, however often it was rewritten")
		}
	})
})
