package broker_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"

	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
)

// siteUser is the leaf user of the specs' sites.
var siteUser = broker.LeafUser{User: "site", Password: "s3cret-leaf"}

// startHub starts a hub that sources sites.
func startHub(sites ...string) *broker.Broker {
	GinkgoHelper()
	return brokertest.StartConfig(GinkgoT(), broker.Config{
		LeafNodes: broker.LeafNodesConfig{Listen: "127.0.0.1:-1", Users: []broker.LeafUser{siteUser}, Sites: sites},
	})
}

// startSite starts the site broker of site, a leaf node of hub.
func startSite(site string, hub *broker.Broker) *broker.Broker {
	GinkgoHelper()
	return brokertest.StartConfig(GinkgoT(), broker.Config{
		Site: site,
		Hub:  broker.HubConfig{URLs: []string{hub.LeafURL()}, User: siteUser.User, Password: siteUser.Password},
	})
}

// provision creates the history stream and the registry on the broker at
// url, sourcing sites.
func provision(url string, sites ...string) jetstream.JetStream {
	GinkgoHelper()
	js, err := jetstream.New(connect(url))
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = jsstore.EnsureHistory(ctx, js, jsstore.HistoryConfig{Sources: sites})
	Expect(err).NotTo(HaveOccurred())
	_, err = jsstore.EnsureRegistry(ctx, js, jsstore.RegistryConfig{Sources: sites})
	Expect(err).NotTo(HaveOccurred())
	return js
}

// subjectCount is how many messages of stream are stored on subject.
func subjectCount(js jetstream.JetStream, stream, subject string) uint64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return 0
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return 0
	}
	return info.State.Subjects[subject]
}

var _ = Describe("A hub with site brokers", func() {
	It("runs each site in its own JetStream domain and sources its history and registry into the hub exactly once", func() {
		hub := startHub("fra1", "ams1")
		Expect(hub.LeafURL()).To(HavePrefix("nats-leaf://127.0.0.1:"))
		fra := startSite("fra1", hub)
		ams := startSite("ams1", hub)
		Eventually(hub.LeafConnections).Should(Equal(2))

		// The sites first: the hub's sources then find their streams at
		// once (a missing one is retried, with a backoff of seconds).
		fraJS := provision(fra.ClientURL())
		amsJS := provision(ams.ClientURL())
		hubJS := provision(hub.ClientURL(), "fra1", "ams1")

		// A site's own JetStream answers in its domain.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ai, err := fraJS.AccountInfo(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(ai.Domain).To(Equal("fra1"))
		ai, err = hubJS.AccountInfo(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(ai.Domain).To(Equal(broker.DefaultHubDomain))

		// An agent at each site records its reply; the hub records the
		// request itself.
		id := "r-sites-1"
		for _, p := range []struct {
			js   jetstream.JetStream
			host string
		}{{fraJS, "web1"}, {amsJS, "web2"}} {
			_, err := jsstore.Publish(ctx, p.js, protocol.HistorySubject(id, p.host), protocol.HistoryMsgID(id, p.host), nil, []byte(`{"identity":"`+p.host+`"}`))
			Expect(err).NotTo(HaveOccurred())
		}
		_, err = jsstore.Publish(ctx, hubJS, protocol.HistoryRequestSubject(id), protocol.HistoryMsgID(id, ""), nil, []byte(`{}`))
		Expect(err).NotTo(HaveOccurred())

		for _, host := range []string{"web1", "web2"} {
			Eventually(func() uint64 {
				return subjectCount(hubJS, protocol.HistoryStream, protocol.HistorySubject(id, host))
			}).WithTimeout(20*time.Second).Should(Equal(uint64(1)), host)
		}
		// Sourcing is done (both records are there): nothing more may
		// come, and each site holds only its own record.
		Consistently(func() uint64 {
			return streamMsgs(hubJS, protocol.HistoryStream)
		}, 2*time.Second, 200*time.Millisecond).Should(Equal(uint64(3)))
		Expect(subjectCount(hubJS, protocol.HistoryStream, protocol.HistorySubject(id, "web1"))).To(Equal(uint64(1)))
		Expect(subjectCount(hubJS, protocol.HistoryStream, protocol.HistoryRequestSubject(id))).To(Equal(uint64(1)))
		Expect(subjectCount(fraJS, protocol.HistoryStream, protocol.HistorySubject(id, "web1"))).To(Equal(uint64(1)))
		Expect(subjectCount(fraJS, protocol.HistoryStream, protocol.HistorySubject(id, "web2"))).To(BeZero())
		Expect(subjectCount(fraJS, protocol.HistoryStream, protocol.HistoryRequestSubject(id))).To(BeZero())
		Expect(streamMsgs(fraJS, protocol.HistoryStream)).To(Equal(uint64(1)))
		Expect(streamMsgs(amsJS, protocol.HistoryStream)).To(Equal(uint64(1)))

		// Registry entries written at a site reach the hub's registry.
		ctx, cancel = context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		fraKV, err := fraJS.KeyValue(ctx, protocol.NodesBucket)
		Expect(err).NotTo(HaveOccurred())
		_, err = fraKV.Put(ctx, "web1", []byte(`{"identity":"web1"}`))
		Expect(err).NotTo(HaveOccurred())
		hubKV, err := hubJS.KeyValue(ctx, protocol.NodesBucket)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() error {
			_, err := hubKV.Get(ctx, "web1")
			return err
		}).Should(Succeed())
		Consistently(func() uint64 { return streamMsgs(hubJS, "KV_"+protocol.NodesBucket) }, time.Second, 200*time.Millisecond).Should(Equal(uint64(1)))
		// Provisioning again without sources (history init against the
		// hub) keeps the hub's.
		hi, err := jsstore.EnsureHistory(ctx, hubJS, jsstore.HistoryConfig{})
		Expect(err).NotTo(HaveOccurred())
		Expect(hi.Config.Sources).To(HaveLen(2))
		_, err = jsstore.EnsureRegistry(ctx, hubJS, jsstore.RegistryConfig{})
		Expect(err).NotTo(HaveOccurred())
		ks, err := hubJS.Stream(ctx, "KV_"+protocol.NodesBucket)
		Expect(err).NotTo(HaveOccurred())
		Expect(ks.CachedInfo().Config.Sources).To(HaveLen(2))
		_, err = fraKV.Put(ctx, "web3", []byte(`{"identity":"web3"}`))
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() error {
			_, err := hubKV.Get(ctx, "web3")
			return err
		}).Should(Succeed())

		amsKV, err := amsJS.KeyValue(ctx, protocol.NodesBucket)
		Expect(err).NotTo(HaveOccurred())
		_, err = amsKV.Get(ctx, "web1")
		Expect(errors.Is(err, jetstream.ErrKeyNotFound)).To(BeTrue(), "the entry of a host at fra1 must not reach ams1: %v", err)
	})

	It("connects a site to the hub over mutual TLS, and refuses a site without the hub's credentials", func() {
		pki := brokertest.WritePKI(GinkgoT(), GinkgoT().TempDir())
		hub := brokertest.StartConfig(GinkgoT(), broker.Config{LeafNodes: broker.LeafNodesConfig{
			Listen: "127.0.0.1:-1", Users: []broker.LeafUser{siteUser},
			TLS: broker.TLSConfig{Cert: pki.ServerCert, Key: pki.ServerKey, CA: pki.CA, Verify: true},
		}})
		tlsURL := strings.Replace(hub.LeafURL(), "nats-leaf://", "tls://", 1)
		fra := brokertest.StartConfig(GinkgoT(), broker.Config{Site: "fra1", Hub: broker.HubConfig{
			URLs: []string{tlsURL}, User: siteUser.User, Password: siteUser.Password,
			TLS: broker.HubTLSConfig{CA: pki.CA, Cert: pki.ClientCert, Key: pki.ClientKey},
		}})
		Eventually(hub.LeafConnections).Should(Equal(1))
		// SIGHUP re-reads the TLS files of the leaf connection too.
		Expect(hub.Reload(context.Background())).To(Succeed())
		Expect(fra.Reload(context.Background())).To(Succeed())

		// The right certificate but a wrong password: never connected.
		brokertest.StartConfig(GinkgoT(), broker.Config{Site: "ams1", Hub: broker.HubConfig{
			URLs: []string{tlsURL}, User: siteUser.User, Password: "wrong",
			TLS: broker.HubTLSConfig{CA: pki.CA, Cert: pki.ClientCert, Key: pki.ClientKey},
		}})
		Consistently(hub.LeafConnections, 2*time.Second, 200*time.Millisecond).Should(Equal(1))
	})

	// With the hub verifying client certificates, a site whose only fault
	// is its certificate (the hub's CA, the right user and password) never
	// connects, and the hub logs why. The positive control, the same
	// settings with the right certificate, connects to the same hub in the
	// same spec: the refusal is the certificate's, not a wrong address.
	DescribeTable("refuses a site whose client certificate the hub cannot verify",
		func(badCert func(other brokertest.PKI) (cert, key string), refusal string) {
			pki := brokertest.WritePKI(GinkgoT(), GinkgoT().TempDir())
			other := brokertest.WritePKI(GinkgoT(), GinkgoT().TempDir()) // another CA
			hubLog := gbytes.NewBuffer()
			hub := brokertest.StartConfig(GinkgoT(), broker.Config{ServerLog: true, LeafNodes: broker.LeafNodesConfig{
				Listen: "127.0.0.1:-1", Users: []broker.LeafUser{siteUser},
				TLS: broker.TLSConfig{Cert: pki.ServerCert, Key: pki.ServerKey, CA: pki.CA, Verify: true},
			}}, broker.WithLogger(slog.New(slog.NewTextHandler(hubLog, nil))))
			tlsURL := strings.Replace(hub.LeafURL(), "nats-leaf://", "tls://", 1)
			siteWith := func(site, cert, key string) *broker.Broker {
				return brokertest.StartConfig(GinkgoT(), broker.Config{Site: site, Hub: broker.HubConfig{
					URLs: []string{tlsURL}, User: siteUser.User, Password: siteUser.Password,
					TLS: broker.HubTLSConfig{CA: pki.CA, Cert: cert, Key: key},
				}})
			}

			cert, key := badCert(other)
			bad := siteWith("ams1", cert, key)
			Eventually(hubLog).WithTimeout(10 * time.Second).Should(gbytes.Say(`TLS leafnode handshake error: ` + refusal))
			Consistently(hub.LeafConnections, 2*time.Second, 200*time.Millisecond).Should(BeZero())
			Expect(bad.LeafConnections()).To(BeZero())

			good := siteWith("fra1", pki.ClientCert, pki.ClientKey)
			Eventually(good.LeafConnections).WithTimeout(10 * time.Second).Should(Equal(1))
			Eventually(hub.LeafConnections).Should(Equal(1))
			// The bad site keeps retrying, and keeps being refused.
			Eventually(hubLog).WithTimeout(10 * time.Second).Should(gbytes.Say(`TLS leafnode handshake error: ` + refusal))
			Consistently(hub.LeafConnections, 2*time.Second, 200*time.Millisecond).Should(Equal(1))
			Expect(bad.LeafConnections()).To(BeZero())
		},
		Entry("no client certificate",
			func(brokertest.PKI) (string, string) { return "", "" },
			`tls: client didn't provide a certificate`),
		Entry("a client certificate of another CA",
			func(other brokertest.PKI) (string, string) { return other.ClientCert, other.ClientKey },
			`tls: failed to verify certificate: x509: certificate signed by unknown authority`),
	)

	It("reloads a hub and a site broker (SIGHUP) with their leaf settings unchanged", func() {
		hub := startHub("fra1")
		fra := startSite("fra1", hub)
		Eventually(hub.LeafConnections).Should(Equal(1))
		Expect(hub.Reload(context.Background())).To(Succeed())
		Expect(fra.Reload(context.Background())).To(Succeed())
		Consistently(hub.LeafConnections, time.Second, 200*time.Millisecond).Should(Equal(1))
	})

	It("keeps requests and replies crossing between the hub and the sites", func() {
		hub := startHub("fra1")
		fra := startSite("fra1", hub)
		Eventually(hub.LeafConnections).Should(Equal(1))
		agent := connect(fra.ClientURL())
		_, err := agent.Subscribe("ccm.v1.req.all", func(m *nats.Msg) { _ = m.Respond([]byte("pong")) })
		Expect(err).NotTo(HaveOccurred())
		Expect(agent.Flush()).To(Succeed())
		orch := connect(hub.ClientURL())
		Eventually(func() (string, error) {
			m, err := orch.Request("ccm.v1.req.all", []byte("ping"), 500*time.Millisecond)
			if err != nil {
				return "", err
			}
			return string(m.Data), nil
		}).Should(Equal("pong"))
	})
})

// streamMsgs is how many messages stream holds.
func streamMsgs(js jetstream.JetStream, stream string) uint64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return 0
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0
	}
	return info.State.Msgs
}

var _ = Describe("Config of hubs and sites", func() {
	hub := broker.HubConfig{URLs: []string{"nats-leaf://hub1:7422"}, User: "fra1", Password: "pw"}
	leaf := broker.LeafNodesConfig{Listen: "0.0.0.0:7422", Users: []broker.LeafUser{{User: "fra1", Password: "pw"}}, Sites: []string{"fra1", "ams1"}}

	DescribeTable("Validate accepts",
		func(cfg broker.Config) { Expect(cfg.Validate()).To(Succeed()) },
		Entry("a site broker", broker.Config{Site: "fra1", Hub: hub}),
		Entry("a site broker with TLS to the hub", broker.Config{Site: "fra-1_a", Hub: broker.HubConfig{URLs: []string{"tls://hub1:7422", "tls://hub2:7422"}, TLS: broker.HubTLSConfig{CA: "ca.pem", Cert: "c.pem", Key: "k.pem"}}}),
		Entry("a hub", broker.Config{LeafNodes: leaf}),
		Entry("a hub with its own domain", broker.Config{LeafNodes: leaf, Domain: "central"}),
	)

	DescribeTable("Validate refuses, naming the key",
		func(cfg broker.Config, want string) {
			err := cfg.Validate()
			Expect(err).To(MatchError(broker.ErrInvalidConfig))
			Expect(err.Error()).To(ContainSubstring(want))
		},
		Entry("a site without a hub URL", broker.Config{Site: "fra1"}, "site fra1: hub.urls is required"),
		Entry("a site name that is not a token", broker.Config{Site: "fra.1", Hub: hub}, `site "fra.1": not a NATS subject token`),
		Entry("a site name with a wildcard", broker.Config{Site: "fra*", Hub: hub}, `site "fra*": not a NATS subject token`),
		Entry("a hub URL without a site", broker.Config{Hub: hub}, "hub: requires site"),
		Entry("a hub URL of another scheme", broker.Config{Site: "fra1", Hub: broker.HubConfig{URLs: []string{"http://hub1:7422"}}}, `hub.urls[0] "http://hub1:7422": scheme "http"`),
		Entry("a hub URL without a port", broker.Config{Site: "fra1", Hub: broker.HubConfig{URLs: []string{"nats-leaf://hub1"}}}, "want scheme://host:port"),
		Entry("a hub user without a password", broker.Config{Site: "fra1", Hub: broker.HubConfig{URLs: hub.URLs, User: "fra1"}}, "hub.user and hub.password: set both or neither"),
		Entry("a hub client certificate without its key", broker.Config{Site: "fra1", Hub: broker.HubConfig{URLs: hub.URLs, TLS: broker.HubTLSConfig{Cert: "c.pem"}}}, "hub.tls.cert and hub.tls.key"),
		Entry("a site that is also a hub", broker.Config{Site: "fra1", Hub: hub, LeafNodes: leaf}, "cannot also be the hub"),
		Entry("a site with a domain", broker.Config{Site: "fra1", Hub: hub, Domain: "x"}, "set site only"),
		Entry("a hub domain that is not a token", broker.Config{LeafNodes: leaf, Domain: "a b"}, `domain "a b": not a NATS subject token`),
		Entry("a hub without leaf users", broker.Config{LeafNodes: broker.LeafNodesConfig{Listen: ":7422"}}, "leafnodes.users: at least one user is required"),
		Entry("a leaf user without a password", broker.Config{LeafNodes: broker.LeafNodesConfig{Listen: ":7422", Users: []broker.LeafUser{{User: "fra1"}}}}, "leafnodes.users[0] (user fra1): password is required"),
		Entry("a bad leaf listen address", broker.Config{LeafNodes: broker.LeafNodesConfig{Listen: "7422", Users: leaf.Users}}, `leafnodes.listen "7422"`),
		Entry("sources without a leaf listener", broker.Config{LeafNodes: broker.LeafNodesConfig{Sites: []string{"fra1"}}}, "leafnodes.listen is required"),
		Entry("a source site that is not a token", broker.Config{LeafNodes: broker.LeafNodesConfig{Listen: ":7422", Users: leaf.Users, Sites: []string{"fra>"}}}, `leafnodes.sites[0] "fra>"`),
		Entry("a source site twice", broker.Config{LeafNodes: broker.LeafNodesConfig{Listen: ":7422", Users: leaf.Users, Sites: []string{"fra1", "fra1"}}}, "listed twice"),
		Entry("the hub's own domain as a site", broker.Config{LeafNodes: broker.LeafNodesConfig{Listen: ":7422", Users: leaf.Users, Sites: []string{"hub"}}}, "the hub's own domain is not a site"),
		Entry("leaf verification without a CA", broker.Config{LeafNodes: broker.LeafNodesConfig{Listen: ":7422", Users: leaf.Users, TLS: broker.TLSConfig{Cert: "c.pem", Key: "k.pem", Verify: true}}}, "leafnodes.tls.ca: required"),
	)

	It("hides the hub password of a URL in errors", func() {
		err := broker.Config{Site: "fra1", Hub: broker.HubConfig{URLs: []string{"ftp://fra1:canary-pw-77@hub1:7422"}}}.Validate()
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).NotTo(ContainSubstring("canary-pw-77"))
	})

	It("names the missing TLS file of the hub connection when the site starts", func() {
		b, err := broker.New(broker.Config{Listen: "127.0.0.1:-1", StoreDir: GinkgoT().TempDir(), Site: "fra1",
			Hub: broker.HubConfig{URLs: []string{"tls://127.0.0.1:7422"}, TLS: broker.HubTLSConfig{CA: "/nonexistent/hub-ca.pem"}}})
		Expect(err).NotTo(HaveOccurred())
		err = b.Start(context.Background())
		Expect(err).To(MatchError(broker.ErrInvalidConfig))
		Expect(err.Error()).To(ContainSubstring("hub.tls.ca /nonexistent/hub-ca.pem"))
	})

	It("names the missing TLS file of the leaf listener when the hub starts", func() {
		b, err := broker.New(broker.Config{Listen: "127.0.0.1:-1", StoreDir: GinkgoT().TempDir(),
			LeafNodes: broker.LeafNodesConfig{Listen: "127.0.0.1:-1", Users: []broker.LeafUser{siteUser}, TLS: broker.TLSConfig{Cert: "/nonexistent/leaf.pem", Key: "/nonexistent/leaf-key.pem"}}})
		Expect(err).NotTo(HaveOccurred())
		err = b.Start(context.Background())
		Expect(err).To(MatchError(broker.ErrInvalidConfig))
		Expect(err.Error()).To(ContainSubstring("leafnodes: "))
		Expect(err.Error()).To(ContainSubstring("/nonexistent/leaf.pem"))
	})
})

var _ = Describe("LoadConfigFile", func() {
	It("reads the shipped hub and site examples", func() {
		hub, err := broker.LoadConfigFile("../dist/broker-hub.yaml")
		Expect(err).NotTo(HaveOccurred())
		Expect(hub.IsHub()).To(BeTrue())
		Expect(hub.JetStreamDomain()).To(Equal("hub"))
		Expect(hub.LeafNodes.Sites).To(Equal([]string{"fra1", "ams1"}))
		site, err := broker.LoadConfigFile("../dist/broker-site.yaml")
		Expect(err).NotTo(HaveOccurred())
		Expect(site.IsSite()).To(BeTrue())
		Expect(site.JetStreamDomain()).To(Equal("fra1"))
		Expect(site.Hub.URLs).To(HaveLen(3))
	})

	It("refuses an unknown key, naming it and the file", func() {
		path := filepath.Join(GinkgoT().TempDir(), "broker.yaml")
		Expect(os.WriteFile(path, []byte("site: fra1\nhub:\n  url: nats-leaf://hub1:7422\n"), 0o600)).To(Succeed())
		_, err := broker.LoadConfigFile(path)
		Expect(err).To(MatchError(broker.ErrInvalidConfig))
		Expect(err.Error()).To(ContainSubstring(path))
		Expect(err.Error()).To(ContainSubstring(`"url"`))
	})

	It("refuses a site without a hub URL, naming the file", func() {
		path := filepath.Join(GinkgoT().TempDir(), "broker.yaml")
		Expect(os.WriteFile(path, []byte("site: fra1\n"), 0o600)).To(Succeed())
		_, err := broker.LoadConfigFile(path)
		Expect(err).To(MatchError(broker.ErrInvalidConfig))
		Expect(err.Error()).To(ContainSubstring(path + ": "))
		Expect(err.Error()).To(ContainSubstring("site fra1: hub.urls is required"))
	})
})
