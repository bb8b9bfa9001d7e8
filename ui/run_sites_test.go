package ui_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/orchestrator/fleettest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/ui"
)

var _ = Describe("the run page of a fleet on sites", func() {
	It("groups the hosts that did not reply by site, as ccm-orch does, and names the ones the registry no longer has", func() {
		ctx := context.Background()
		fl := fleettest.StartWith(GinkgoT(), fleettest.Options{History: true}, 4, nil, "site=fra1,ams2")
		nc := fl.Connect(GinkgoT())
		js, err := jetstream.New(nc)
		Expect(err).NotTo(HaveOccurred())
		kv, err := js.KeyValue(ctx, protocol.NodesBucket)
		Expect(err).NotTo(HaveOccurred())
		// Registered hosts whose agents are gone, as when their site
		// went dark.
		for id, site := range map[string]string{"dark-a1": "ams2", "dark-a2": "ams2", "dark-p1": "", "dark-x1": "lon1"} {
			facts := map[string]any{"identity": id}
			if site != "" {
				facts["site"] = site
			}
			rec, err := json.Marshal(protocol.NodeRecord{Protocol: protocol.NodeProtocol, Identity: id, Facts: facts, Started: time.Now(), LastSeen: time.Now()})
			Expect(err).NotTo(HaveOccurred())
			_, err = kv.Put(ctx, id, rec)
			Expect(err).NotTo(HaveOccurred())
		}

		srv, err := ui.New(fl.Connect(GinkgoT()), ui.Options{LiveInterval: 100 * time.Millisecond})
		Expect(err).NotTo(HaveOccurred())
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { srv.Run(runCtx); close(done) }()
		DeferCleanup(func() { cancel(); <-done })
		web := httptest.NewServer(srv)
		DeferCleanup(web.Close)

		e, err := protocol.NewEnsureRequest("exec", map[string]any{"name": "/bin/true"})
		Expect(err).NotTo(HaveOccurred())
		res, err := orchestrator.New(nc).Run(ctx, orchestrator.Request{Ensure: e, Timeout: time.Second, Discovery: orchestrator.DiscoveryRegistry})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.NoReply).To(Equal([]string{"dark-a1", "dark-a2", "dark-p1", "dark-x1"}))
		// dark-x1's entry expires: the dashboard no longer knows its site.
		Expect(kv.Delete(ctx, "dark-x1")).To(Succeed())

		page := func() string {
			resp, err := http.Get(web.URL + "/runs/" + res.RequestID)
			if err != nil {
				return err.Error()
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return string(b)
		}
		Eventually(page).WithTimeout(20 * time.Second).Should(ContainSubstring(
			`<summary><b>4 no reply</b> (site ams2: 2, (no site): 1, (not in the registry): 1)</summary>` +
				`<p class="site"><b>site ams2</b>: dark-a1, dark-a2</p>` +
				`<p class="site"><b>(no site)</b>: dark-p1</p>` +
				`<p class="site"><b>(not in the registry)</b>: dark-x1</p>`))
	})
})
