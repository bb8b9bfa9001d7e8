package broker_test

import (
	"errors"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"gopkg.in/yaml.v3"

	"github.com/ccm-fleet/ccm/broker"
)

var _ = Describe("Config", func() {
	It("decodes from YAML with the documented keys", func() {
		doc := `
listen: 0.0.0.0:4333
store_dir: /var/lib/ccm/broker
server_name: n1
server_log: true
cluster:
  name: ccm
  listen: 0.0.0.0:6222
  routes: [nats-route://n2:6222, nats-route://n3:6222]
tls:
  cert: /etc/ccm/server.pem
  key: /etc/ccm/server-key.pem
  ca: /etc/ccm/ca.pem
  verify: true
`
		var cfg broker.Config
		Expect(yaml.Unmarshal([]byte(doc), &cfg)).To(Succeed())
		Expect(cfg).To(Equal(broker.Config{
			Listen:     "0.0.0.0:4333",
			StoreDir:   "/var/lib/ccm/broker",
			ServerName: "n1",
			ServerLog:  true,
			Cluster: broker.ClusterConfig{
				Name:   "ccm",
				Listen: "0.0.0.0:6222",
				Routes: []string{"nats-route://n2:6222", "nats-route://n3:6222"},
			},
			TLS: broker.TLSConfig{
				Cert: "/etc/ccm/server.pem", Key: "/etc/ccm/server-key.pem",
				CA: "/etc/ccm/ca.pem", Verify: true,
			},
		}))
		Expect(cfg.Validate()).To(Succeed())
	})

	DescribeTable("Validate accepts",
		func(cfg broker.Config) {
			Expect(cfg.Validate()).To(Succeed())
		},
		Entry("the zero value (defaults)", broker.Config{}),
		Entry("a fixed port", broker.Config{Listen: "127.0.0.1:4222"}),
		Entry("port 0 (random)", broker.Config{Listen: "127.0.0.1:0"}),
		Entry("port -1 (random)", broker.Config{Listen: "127.0.0.1:-1"}),
		Entry("every interface", broker.Config{Listen: ":4222"}),
		Entry("IPv6", broker.Config{Listen: "[::1]:4222"}),
		Entry("TLS without client verification", broker.Config{TLS: broker.TLSConfig{Cert: "c.pem", Key: "k.pem"}}),
		Entry("a cluster", broker.Config{ServerName: "n1", Cluster: broker.ClusterConfig{
			Name: "ccm", Listen: "127.0.0.1:-1", Routes: []string{"nats-route://127.0.0.1:6222", "nats://h:1"}}}),
	)

	DescribeTable("Validate rejects",
		func(cfg broker.Config, want string) {
			err := cfg.Validate()
			Expect(err).To(MatchError(broker.ErrInvalidConfig))
			Expect(err.Error()).To(ContainSubstring(want))
		},
		Entry("a listen address without port", broker.Config{Listen: "localhost"}, `listen "localhost": not host:port`),
		Entry("a non-numeric port", broker.Config{Listen: "127.0.0.1:http"}, `port "http" is not a number`),
		Entry("a port out of range", broker.Config{Listen: "127.0.0.1:70000"}, "port 70000 out of range"),
		Entry("a negative port", broker.Config{Listen: "127.0.0.1:-2"}, "port -2 out of range"),
		Entry("a server name with spaces", broker.Config{ServerName: "a b"}, "server_name \"a b\": must not contain whitespace"),
		Entry("routes without a cluster listener", broker.Config{Cluster: broker.ClusterConfig{Routes: []string{"nats-route://h:6222"}}},
			"cluster.routes: cluster.listen is required"),
		Entry("a cluster without a name", broker.Config{ServerName: "n1", Cluster: broker.ClusterConfig{Listen: "127.0.0.1:6222"}},
			"cluster.name: required with cluster.listen"),
		Entry("a cluster without a server name", broker.Config{Cluster: broker.ClusterConfig{Name: "c", Listen: "127.0.0.1:6222"}},
			"server_name: required with cluster.listen"),
		Entry("a cluster without routes", broker.Config{ServerName: "n1", Cluster: broker.ClusterConfig{Name: "c", Listen: "127.0.0.1:6222"}},
			"cluster.routes: required with cluster.listen"),
		Entry("a bad cluster listener", broker.Config{ServerName: "n1", Cluster: broker.ClusterConfig{Name: "c", Listen: "x"}},
			`cluster.listen "x"`),
		Entry("a route with a wrong scheme", broker.Config{ServerName: "n1", Cluster: broker.ClusterConfig{
			Name: "c", Listen: "127.0.0.1:6222", Routes: []string{"http://h:6222"}}}, `cluster.routes[0] "http://h:6222": scheme "http"`),
		Entry("a route without a port", broker.Config{ServerName: "n1", Cluster: broker.ClusterConfig{
			Name: "c", Listen: "127.0.0.1:6222", Routes: []string{"nats-route://h"}}}, "want scheme://host:port"),
		Entry("a TLS key without certificate", broker.Config{TLS: broker.TLSConfig{Key: "k.pem"}}, "tls.cert: required with tls.key"),
		Entry("a TLS certificate without key", broker.Config{TLS: broker.TLSConfig{Cert: "c.pem"}}, "tls.key: required with tls.cert"),
		Entry("verify without a CA", broker.Config{TLS: broker.TLSConfig{Cert: "c.pem", Key: "k.pem", Verify: true}},
			"tls.ca: required with tls.verify"),
		Entry("verify without a certificate", broker.Config{TLS: broker.TLSConfig{CA: "ca.pem", Verify: true}},
			"tls.verify: requires tls.cert and tls.key"),
		Entry("a CA without a certificate", broker.Config{TLS: broker.TLSConfig{CA: "ca.pem"}}, "tls.ca: requires tls.cert and tls.key"),
		Entry("clustering with TLS but no CA", broker.Config{ServerName: "n1",
			Cluster: broker.ClusterConfig{Name: "c", Listen: "127.0.0.1:6222", Routes: []string{"nats-route://h:6222"}},
			TLS:     broker.TLSConfig{Cert: "c.pem", Key: "k.pem"}}, "tls.ca: required when clustering with TLS"),
	)

	It("reports every problem at once", func() {
		err := broker.Config{Listen: "nope", TLS: broker.TLSConfig{Cert: "c.pem"}}.Validate()
		Expect(err.Error()).To(And(ContainSubstring(`listen "nope"`), ContainSubstring("tls.key")))
	})

	It("makes New refuse an invalid configuration", func() {
		b, err := broker.New(broker.Config{Listen: "nope"})
		Expect(b).To(BeNil())
		Expect(errors.Is(err, broker.ErrInvalidConfig)).To(BeTrue())
	})
})
