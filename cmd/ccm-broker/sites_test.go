package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
)

// leafURLPattern finds the leaf URL in the hub's announcement.
var leafURLPattern = regexp.MustCompile(`connect on (nats-leaf://127\.0\.0\.1:\d+)`)

var _ = Describe("ccm-broker hubs and sites", func() {
	DescribeTable("exits 1 with a line naming the problem",
		func(args []string, file, want string) {
			dir := GinkgoT().TempDir()
			if file != "" {
				p := filepath.Join(dir, "broker.yaml")
				Expect(os.WriteFile(p, []byte(file), 0o600)).To(Succeed())
				args = append(args, "--config", p)
			}
			code, _, errOut := brk(append([]string{"--listen", "127.0.0.1:-1", "--store", dir}, args...)...)
			Expect(code).To(Equal(1))
			Expect(lines(errOut)).To(HaveLen(1))
			Expect(errOut).To(ContainSubstring(want))
		},
		Entry("a site without a hub URL", []string{"--site", "fra1"}, "", "site fra1: hub.urls is required"),
		Entry("a site name that is not a token", []string{"--site", "fra.1", "--hub-url", "nats-leaf://127.0.0.1:7422"}, "", `site "fra.1": not a NATS subject token`),
		Entry("a hub without leaf users", []string{"--leaf-listen", "127.0.0.1:-1"}, "", "leafnodes.users: at least one user is required"),
		Entry("a config file's site without a hub URL", nil, "site: fra1\n", "site fra1: hub.urls is required"),
		Entry("a config file with an unknown key", nil, "site: fra1\nhub: {url: nats-leaf://127.0.0.1:7422}\n", `unknown key "url"`),
		Entry("a config file whose hub TLS file is missing", nil,
			"site: fra1\nhub: {urls: [tls://127.0.0.1:7422], tls: {ca: /nonexistent/ca.pem}}\n", "hub.tls.ca /nonexistent/ca.pem"),
		Entry("a config file completed by a flag (site) still checked", []string{"--site", "fra1"},
			"hub: {urls: [nats-leaf://127.0.0.1:7422], user: fra1}\n", "hub.user and hub.password: set both or neither"),
		Entry("a flag that breaks the config file", []string{"--site", "fra1", "--hub-url", "nats-leaf://127.0.0.1:7422"},
			"leafnodes: {listen: 127.0.0.1:-1, users: [{user: fra1, password: pw}]}\n", "a site broker cannot also be the hub"),
	)

	It("runs a hub from its config file and a site broker that connects to it, flags winning over the file", func() {
		dir := GinkgoT().TempDir()
		hubFile := filepath.Join(dir, "hub.yaml")
		Expect(os.WriteFile(hubFile, []byte("listen: 127.0.0.1:1\nleafnodes:\n  listen: 127.0.0.1:-1\n  users: [{user: fra1, password: pw-fra1}]\n  sites: [fra1]\n"), 0o600)).To(Succeed())
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		hubOut, hubErr := gbytes.NewBuffer(), gbytes.NewBuffer()
		hubDone := make(chan int, 1)
		go func() {
			hubDone <- runContext(ctx, []string{"--config", hubFile, "--listen", "127.0.0.1:-1", "--store", filepath.Join(dir, "hub")}, hubOut, hubErr)
		}()
		Eventually(hubOut).WithTimeout(fleetTimeout).Should(gbytes.Say(`hub: JetStream domain hub, site brokers connect on (nats-leaf://127\.0\.0\.1:\d+), sourcing sites fra1\n`))
		leafURL := hubOut.Contents()
		m := leafURLPattern.FindSubmatch(leafURL)
		Expect(m).To(HaveLen(2))
		Eventually(hubErr).WithTimeout(fleetTimeout).Should(gbytes.Say(`ready \(1 replica\), sourcing the history and registry of sites fra1`))

		siteFile := filepath.Join(dir, "site.yaml")
		Expect(os.WriteFile(siteFile, []byte("site: fra1\nhub: {urls: ["+string(m[1])+"], user: fra1, password: pw-fra1}\n"), 0o600)).To(Succeed())
		siteOut, siteErr := gbytes.NewBuffer(), gbytes.NewBuffer()
		siteDone := make(chan int, 1)
		go func() {
			siteDone <- runContext(ctx, []string{"--config", siteFile, "--listen", "127.0.0.1:-1", "--store", filepath.Join(dir, "site")}, siteOut, siteErr)
		}()
		Eventually(siteOut).WithTimeout(fleetTimeout).Should(gbytes.Say(`site fra1: JetStream domain fra1, leaf node of the hub at nats-leaf://`))
		Eventually(siteErr).WithTimeout(fleetTimeout).Should(gbytes.Say(`ready \(1 replica\), assignments mirrored from the hub \(domain hub\)\n`))
		cancel()
		Eventually(siteDone).WithTimeout(fleetTimeout).Should(Receive(Equal(0)))
		Eventually(hubDone).WithTimeout(fleetTimeout).Should(Receive(Equal(0)))
	})
})
