package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"

	"github.com/ccm-fleet/ccm/protocol"
)

// Issue 39, finding 3, what the allow-list cannot stop: a client of a site
// broker creates a consumer of the hub's assignment bucket (the permission
// the site's mirror needs) that delivers to the fleet's request subject.
var _ = Describe("ccm-broker's guard of the assignment bucket's consumers at a hub", func() {
	It("deletes a consumer a site's client made to deliver to ccm.v1.req.all, and leaves the mirror and the watchers alone", func() {
		dir := GinkgoT().TempDir()
		hubListen, siteListen := freeListen(), freeListen()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()

		hubFile := filepath.Join(dir, "hub.yaml")
		Expect(os.WriteFile(hubFile, []byte("leafnodes:\n  listen: 127.0.0.1:-1\n  users: [{user: fra1, password: pw-fra1}]\n  sites: [fra1]\n"), 0o600)).To(Succeed())
		hubOut, hubErr := gbytes.NewBuffer(), gbytes.NewBuffer()
		hubDone := make(chan int, 1)
		go func() {
			hubDone <- runContext(ctx, []string{"--config", hubFile, "--listen", hubListen, "--store", filepath.Join(dir, "hub")}, hubOut, hubErr)
		}()
		Eventually(hubErr).WithTimeout(fleetTimeout).Should(gbytes.Say(`ready \(1 replica\)`))
		m := leafURLPattern.FindSubmatch(hubOut.Contents())
		Expect(m).To(HaveLen(2))
		siteFile := filepath.Join(dir, "site.yaml")
		Expect(os.WriteFile(siteFile, []byte("site: fra1\nhub: {urls: ["+string(m[1])+"], user: fra1, password: pw-fra1}\n"), 0o600)).To(Succeed())
		siteOut, siteErr := gbytes.NewBuffer(), gbytes.NewBuffer()
		siteDone := make(chan int, 1)
		go func() {
			siteDone <- runContext(ctx, []string{"--config", siteFile, "--listen", siteListen, "--store", filepath.Join(dir, "site")}, siteOut, siteErr)
		}()
		Eventually(siteErr).WithTimeout(fleetTimeout).Should(gbytes.Say(`assignments mirrored from the hub \(domain hub\)\n`))

		hubNC, err := nats.Connect("nats://" + hubListen)
		Expect(err).NotTo(HaveOccurred())
		defer hubNC.Close()
		hubJS, err := jetstream.New(hubNC)
		Expect(err).NotTo(HaveOccurred())
		hubKV, err := hubJS.KeyValue(ctx, protocol.AssignmentsBucket)
		Expect(err).NotTo(HaveOccurred())
		_, err = hubKV.Put(ctx, "motd", []byte("first"))
		Expect(err).NotTo(HaveOccurred())
		// A watcher at the hub (an ordered consumer, delivering to an
		// inbox), which the guard leaves alone.
		watch, err := hubKV.WatchAll(ctx)
		Expect(err).NotTo(HaveOccurred())
		defer func() { _ = watch.Stop() }()

		// An agent at the hub, listening to every request.
		requests := make(chan *nats.Msg, 1024)
		_, err = hubNC.Subscribe(protocol.RequestSubjectAll, func(m *nats.Msg) { requests <- m })
		Expect(err).NotTo(HaveOccurred())
		Expect(hubNC.Flush()).To(Succeed())

		siteNC, err := nats.Connect("nats://" + siteListen)
		Expect(err).NotTo(HaveOccurred())
		defer siteNC.Close()
		req, err := json.Marshal(map[string]any{"stream_name": assignmentStream, "config": map[string]any{
			"durable_name": "canary-reflect", "deliver_subject": protocol.RequestSubjectAll, "deliver_policy": "all", "ack_policy": "none",
			"idle_heartbeat": int64(100 * time.Millisecond)}})
		Expect(err).NotTo(HaveOccurred())
		// No answer crosses back to the site's client (only the site
		// brokers' own inboxes do), but the request reaches the hub.
		_, _ = siteNC.Request("$JS.hub.API.CONSUMER.CREATE."+assignmentStream+".canary-reflect", req, time.Second)

		Eventually(hubErr).WithTimeout(fleetTimeout).Should(gbytes.Say(`deleted consumer canary-reflect of the assignment bucket KV_CCM_ASSIGNMENTS: it delivered to "ccm.v1.req.all", neither a mirror's \(\$JS.M.\) nor an inbox \(_INBOX.\)`))
		_, err = hubJS.PushConsumer(ctx, assignmentStream, "canary-reflect")
		Expect(errors.Is(err, jetstream.ErrConsumerNotFound)).To(BeTrue(), "%v", err)
		// Nothing more reaches the hub's agent (it may have had a few
		// heartbeats before the consumer was deleted).
		for len(requests) > 0 {
			<-requests
		}
		Consistently(requests, time.Second).ShouldNot(Receive())

		// The mirror and the watcher go on.
		_, err = hubKV.Put(ctx, "motd", []byte("second"))
		Expect(err).NotTo(HaveOccurred())
		siteJS, err := jetstream.New(siteNC)
		Expect(err).NotTo(HaveOccurred())
		siteKV, err := siteJS.KeyValue(ctx, protocol.AssignmentsBucket)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() string {
			e, err := siteKV.Get(ctx, "motd")
			if err != nil {
				return err.Error()
			}
			return string(e.Value())
		}).WithTimeout(fleetTimeout).Should(Equal("second"))
		Eventually(func() string {
			for {
				select {
				case e := <-watch.Updates():
					if e != nil && string(e.Value()) == "second" {
						return "second"
					}
				default:
					return ""
				}
			}
		}).WithTimeout(fleetTimeout).Should(Equal("second"))
		Expect(hubErr).NotTo(gbytes.Say("deleted consumer"), "only the one consumer was deleted")

		cancel()
		Eventually(siteDone).WithTimeout(fleetTimeout).Should(Receive(Equal(0)))
		Eventually(hubDone).WithTimeout(fleetTimeout).Should(Receive(Equal(0)))
	})
})
