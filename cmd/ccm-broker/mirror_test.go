package main

import (
	"context"
	"net"
	"os"
	"path/filepath"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"

	"github.com/ccm-fleet/ccm/protocol"
)

// freeListen is a loopback address no one listens on now.
func freeListen() string {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().String()
}

var _ = Describe("ccm-broker's assignment mirror watch at a site", func() {
	It("leaves a mirror that follows the hub alone, and sets up again one that stalls while the hub answers", func() {
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
		siteNC, err := nats.Connect("nats://" + siteListen)
		Expect(err).NotTo(HaveOccurred())
		defer siteNC.Close()
		hubJS, err := jetstream.New(hubNC)
		Expect(err).NotTo(HaveOccurred())
		siteJS, err := jetstream.New(siteNC)
		Expect(err).NotTo(HaveOccurred())
		hubKV, err := hubJS.KeyValue(ctx, protocol.AssignmentsBucket)
		Expect(err).NotTo(HaveOccurred())
		siteKV, err := siteJS.KeyValue(ctx, protocol.AssignmentsBucket)
		Expect(err).NotTo(HaveOccurred())
		atSite := func(key string) func() string {
			return func() string {
				e, err := siteKV.Get(ctx, key)
				if err != nil {
					return err.Error()
				}
				return string(e.Value())
			}
		}

		// A mirror that follows: stored at the hub, seen at the site, and
		// the watch says nothing for several checks.
		_, err = hubKV.Put(ctx, "motd", []byte("first"))
		Expect(err).NotTo(HaveOccurred())
		Eventually(atSite("motd")).WithTimeout(fleetTimeout).Should(Equal("first"))
		Consistently(siteErr).WithTimeout(3 * sourcingCheckInterval).ShouldNot(gbytes.Say("mirror"))

		// A mirror that stalls while the hub answers: the site's bucket
		// is made again as a mirror of a stream the hub does not have.
		stream, err := siteJS.Stream(ctx, assignmentStream)
		Expect(err).NotTo(HaveOccurred())
		cfg := stream.CachedInfo().Config
		Expect(cfg.Mirror).NotTo(BeNil())
		cfg.Mirror.Name = "KV_NOT_THERE"
		Expect(siteJS.DeleteStream(ctx, assignmentStream)).To(Succeed())
		_, err = siteJS.CreateStream(ctx, cfg)
		Expect(err).NotTo(HaveOccurred())
		_, err = hubKV.Put(ctx, "motd", []byte("second"))
		Expect(err).NotTo(HaveOccurred())

		Eventually(siteErr).WithTimeout(fleetTimeout).Should(gbytes.Say(`the mirror of the hub's assignments stalled while the hub answers \(domain hub\): set up again, copying the hub's bucket anew`))
		Eventually(atSite("motd")).WithTimeout(fleetTimeout).Should(Equal("second"))
		stream, err = siteJS.Stream(ctx, assignmentStream)
		Expect(err).NotTo(HaveOccurred())
		Expect(stream.CachedInfo().Config.Mirror.Name).To(Equal(assignmentStream))

		cancel()
		Eventually(siteDone).WithTimeout(fleetTimeout).Should(Receive(Equal(0)))
		Eventually(hubDone).WithTimeout(fleetTimeout).Should(Receive(Equal(0)))
	})
})
