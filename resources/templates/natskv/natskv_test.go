package natskv_test

import (
	"context"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/resources/templates"
	"github.com/ccm-fleet/ccm/resources/templates/natskv"
)

var _ = Describe("Reader", func() {
	var (
		ctx context.Context
		kv  jetstream.KeyValue
		env *templates.Env
	)

	BeforeEach(func() {
		ctx = context.Background()
		b := brokertest.Start(GinkgoT())
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(nc.Close)
		js, err := jetstream.New(nc)
		Expect(err).NotTo(HaveOccurred())
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "secrets"})
		Expect(err).NotTo(HaveOccurred())
		env = templates.New(nil, nil, templates.WithKV(natskv.New(js), 0))
	})

	It("gives kvGet(bucket, key) the latest value of the key", func() {
		_, err := kv.PutString(ctx, "db.password", "canary-kv-old")
		Expect(err).NotTo(HaveOccurred())
		_, err = kv.PutString(ctx, "db.password", "canary-kv-7f3a")
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Expand(`pw=${ kvGet("secrets", "db.password") }`)).To(Equal("pw=canary-kv-7f3a"))
		Expect(env.Expand(`{{ kvGet('secrets', 'db.password') }}`)).To(Equal("canary-kv-7f3a"))
	})

	It("fails, naming the key, for a missing or deleted key and a missing bucket", func() {
		_, err := env.Expand(`${ kvGet("secrets", "nope") }`)
		Expect(err).To(MatchError(templates.ErrMissingKey))
		Expect(err.Error()).To(ContainSubstring("nope"))

		_, err = kv.PutString(ctx, "gone", "x")
		Expect(err).NotTo(HaveOccurred())
		Expect(kv.Delete(ctx, "gone")).To(Succeed())
		_, err = env.Expand(`${ kvGet("secrets", "gone") }`)
		Expect(err).To(MatchError(templates.ErrMissingKey))

		_, err = env.Expand(`${ kvGet("no_such_bucket", "k") }`)
		Expect(err).To(MatchError(templates.ErrMissingKey))
		Expect(err.Error()).To(ContainSubstring("no_such_bucket"))
	})
})

var _ = Describe("kvGet and sensitivity", func() {
	It("makes a resource whose templates call kvGet sensitive", func() {
		b := brokertest.Start(GinkgoT())
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(nc.Close)
		js, err := jetstream.New(nc)
		Expect(err).NotTo(HaveOccurred())
		env := templates.New(nil, nil, templates.WithKV(natskv.New(js), 0))
		raw := map[string]any{"content": `${ kvGet("secrets", "db.password") }`}
		Expect(env.Sensitive(raw, map[string]any{"content": "canary-kv-sensitive"})).To(BeTrue())
		Expect(env.Sensitive(map[string]any{"content": "${ Facts.x }"}, map[string]any{"content": "x"})).To(BeFalse())
	})
})

var _ = Describe("kvGet in a manifest", func() {
	It("reads the bucket when RunOptions.KV is given, and is not available otherwise", func() {
		ctx := context.Background()
		b := brokertest.Start(GinkgoT())
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(nc.Close)
		js, err := jetstream.New(nc)
		Expect(err).NotTo(HaveOccurred())
		kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "secrets"})
		Expect(err).NotTo(HaveOccurred())
		_, err = kv.PutString(ctx, "motd", "canary-kv-motd")
		Expect(err).NotTo(HaveOccurred())

		m, err := manifest.Parse([]byte(`
ccm:
  resources:
    - file:
        - /tmp/motd: {content: "${ kvGet('secrets', 'motd') }", owner: root, group: root, mode: "0644"}
`), manifest.ParseOptions{})
		Expect(err).NotTo(HaveOccurred())
		r, err := m.Resolve(manifest.RunOptions{KV: natskv.New(js)})
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Resources[0].Properties).To(HaveKeyWithValue("content", "canary-kv-motd"))

		_, err = m.Resolve(manifest.RunOptions{})
		Expect(err).To(MatchError(templates.ErrDisabled))
	})
})
