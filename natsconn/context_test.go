package natsconn_test

import (
	"context"
	"os"
	"os/user"
	"path/filepath"
	"time"

	"github.com/nats-io/jsm.go/natscontext"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/natsconn"
)

var _ = Describe("Context", func() {
	var home string

	BeforeEach(func() {
		home = useConfigHome()
	})

	Describe("ContextPath", func() {
		It("looks under $XDG_CONFIG_HOME/nats/context", func() {
			Expect(natsconn.ContextPath("prod")).To(Equal(filepath.Join(home, "nats", "context", "prod.json")))
		})

		It("falls back to ~/.config/nats/context of the user's home, as the nats CLI does", func() {
			GinkgoT().Setenv("XDG_CONFIG_HOME", "")
			Expect(natsconn.ContextPath("prod")).To(Equal(filepath.Join(userHome(), ".config", "nats", "context", "prod.json")))
		})

		DescribeTable("rejects names that are not plain names",
			func(name string) {
				_, err := natsconn.ContextPath(name)
				Expect(err).To(MatchError(natsconn.ErrContext))
				Expect(err.Error()).To(ContainSubstring("invalid name"))
			},
			Entry("empty", ""),
			Entry("dot", "."),
			Entry("a parent directory", "../prod"),
			Entry("a path", "team/prod"),
			Entry("a Windows path", `team\prod`),
		)
	})

	Describe("ReadContext", func() {
		It("reads the connection fields, ignores the rest and expands ~/ and $VARs as the nats CLI does", func() {
			GinkgoT().Setenv("CCM_TEST_CA_DIR", "/etc/ccm")
			writeContext(home, "prod", map[string]any{
				"description": "production", "url": "nats://a:4222,nats://b:4222",
				"creds": "~/.nats/prod.creds", "nkey": "/etc/ccm/prod.nk",
				"cert": "~/c.pem", "key": "~/k.pem", "ca": "$CCM_TEST_CA_DIR/ca.pem",
				"user": "ops", "password": "pw", "token": "tok", "jetstream_domain": "hub",
			})
			Expect(natsconn.ReadContext("prod")).To(Equal(natsconn.Context{
				URL:   "nats://a:4222,nats://b:4222",
				Creds: filepath.Join(userHome(), ".nats", "prod.creds"), NKey: "/etc/ccm/prod.nk",
				Cert: filepath.Join(userHome(), "c.pem"), Key: filepath.Join(userHome(), "k.pem"), CA: "/etc/ccm/ca.pem",
				User: "ops", Password: "pw", Token: "tok",
			}))
		})

		It("names the missing context and its file", func() {
			_, err := natsconn.ReadContext("nope")
			Expect(err).To(MatchError(natsconn.ErrContext))
			Expect(err.Error()).To(And(ContainSubstring(`"nope"`),
				ContainSubstring(filepath.Join(home, "nats", "context", "nope.json"))))
		})

		It("takes a context file exactly as the nats CLI does: a key given twice is its last value", func() {
			path := writeContext(home, "twice", nil)
			Expect(os.WriteFile(path, []byte(`{"url":"nats://a:4222","url":"nats://b:4222"}`), 0o600)).To(Succeed())
			c, err := natsconn.ReadContext("twice")
			Expect(err).ToNot(HaveOccurred())
			Expect(c.URL).To(Equal("nats://b:4222"))
		})

		It("does not read a key in another case as the key", func() {
			writeContext(home, "cased", map[string]any{"URL": "nats://evil:4222", "url": "nats://a:4222"})
			c, err := natsconn.ReadContext("cased")
			Expect(err).ToNot(HaveOccurred())
			Expect(c.URL).To(Equal("nats://a:4222"))
		})

		It("names a context file that is not JSON", func() {
			path := writeContext(home, "broken", nil)
			Expect(os.WriteFile(path, []byte("url: nats://x"), 0o600)).To(Succeed())
			_, err := natsconn.ReadContext("broken")
			Expect(err).To(MatchError(natsconn.ErrContext))
			Expect(err.Error()).To(ContainSubstring(path))
		})
	})

	Describe("Options.Resolve", func() {
		BeforeEach(func() {
			writeContext(home, "ctx", map[string]any{
				"url": "nats://ctx:4222", "creds": "/ctx.creds", "user": "cu", "password": "cp", "token": "ct",
				"cert": "/ctx-cert.pem", "key": "/ctx-key.pem", "ca": "/ctx-ca.pem",
			})
		})

		DescribeTable("merges the context under the explicit options",
			func(in, want natsconn.Options) {
				Expect(in.Resolve()).To(Equal(want))
			},
			Entry("no context: default servers", natsconn.Options{Name: "n"},
				natsconn.Options{Servers: natsconn.DefaultServers, Name: "n"}),
			Entry("the context alone", natsconn.Options{Context: "ctx"},
				natsconn.Options{Servers: "nats://ctx:4222", Creds: "/ctx.creds", User: "cu", Password: "cp", Token: "ct",
					TLSCert: "/ctx-cert.pem", TLSKey: "/ctx-key.pem", TLSCA: "/ctx-ca.pem"}),
			Entry("explicit servers win", natsconn.Options{Context: "ctx", Servers: "nats://mine:4222"},
				natsconn.Options{Servers: "nats://mine:4222", Creds: "/ctx.creds", User: "cu", Password: "cp", Token: "ct",
					TLSCert: "/ctx-cert.pem", TLSKey: "/ctx-key.pem", TLSCA: "/ctx-ca.pem"}),
			Entry("explicit nkey replaces all of the context's authentication", natsconn.Options{Context: "ctx", NKey: "/my.nk"},
				natsconn.Options{Servers: "nats://ctx:4222", NKey: "/my.nk",
					TLSCert: "/ctx-cert.pem", TLSKey: "/ctx-key.pem", TLSCA: "/ctx-ca.pem"}),
			Entry("explicit token replaces all of the context's authentication", natsconn.Options{Context: "ctx", Token: "mine"},
				natsconn.Options{Servers: "nats://ctx:4222", Token: "mine",
					TLSCert: "/ctx-cert.pem", TLSKey: "/ctx-key.pem", TLSCA: "/ctx-ca.pem"}),
			Entry("an explicit certificate replaces the context's pair", natsconn.Options{Context: "ctx", TLSCert: "/c", TLSKey: "/k"},
				natsconn.Options{Servers: "nats://ctx:4222", Creds: "/ctx.creds", User: "cu", Password: "cp", Token: "ct",
					TLSCert: "/c", TLSKey: "/k", TLSCA: "/ctx-ca.pem"}),
			Entry("an explicit CA replaces only the CA", natsconn.Options{Context: "ctx", TLSCA: "/ca"},
				natsconn.Options{Servers: "nats://ctx:4222", Creds: "/ctx.creds", User: "cu", Password: "cp", Token: "ct",
					TLSCert: "/ctx-cert.pem", TLSKey: "/ctx-key.pem", TLSCA: "/ca"}),
		)

		It("fails on a context it cannot read", func() {
			_, err := natsconn.Options{Context: "missing"}.Resolve()
			Expect(err).To(MatchError(natsconn.ErrContext))
		})
	})

	Describe("Connect with a context", func() {
		var ctx context.Context

		BeforeEach(func() {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
			DeferCleanup(cancel)
		})

		It("connects to the context's url", func() {
			b := brokertest.Start(GinkgoT())
			writeContext(home, "local", map[string]any{"url": b.ClientURL()})
			nc, err := natsconn.Connect(ctx, natsconn.Options{Context: "local"})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(nc.Close)
			Expect(nc.ConnectedUrl()).To(Equal(b.ClientURL()))
		})

		It("lets explicit servers override the context's url", func() {
			b := brokertest.Start(GinkgoT())
			dead := "nats://" + freeAddr()
			writeContext(home, "stale", map[string]any{"url": dead})

			_, err := natsconn.Connect(ctx, natsconn.Options{Context: "stale"})
			Expect(err).To(MatchError(natsconn.ErrConnect))
			Expect(err.Error()).To(ContainSubstring(dead))

			nc, err := natsconn.Connect(ctx, natsconn.Options{Context: "stale", Servers: b.ClientURL()})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(nc.Close)
			Expect(nc.ConnectedUrl()).To(Equal(b.ClientURL()))
		})

		It("lets explicit creds override the context's, naming the file actually used", func() {
			dir := GinkgoT().TempDir()
			writeContext(home, "ctx", map[string]any{"url": "nats://" + freeAddr(), "creds": filepath.Join(dir, "ctx.creds")})
			_, err := natsconn.Connect(ctx, natsconn.Options{Context: "ctx", Creds: filepath.Join(dir, "mine.creds")})
			Expect(err).To(MatchError(natsconn.ErrCredentials))
			Expect(err.Error()).To(ContainSubstring(filepath.Join(dir, "mine.creds")))
			Expect(err.Error()).NotTo(ContainSubstring("ctx.creds"))
		})

		It("fails before dialling when the context is missing", func() {
			_, err := natsconn.Connect(ctx, natsconn.Options{Context: "missing"})
			Expect(err).To(MatchError(natsconn.ErrContext))
		})
	})
})

var _ = Describe("ReadContext against the nats CLI's own context package", func() {
	var home string
	BeforeEach(func() {
		home = useConfigHome()
		GinkgoT().Setenv("CCM_TEST_DIR", "/srv/ccm")
		// An nsc that knows one user, alone on PATH.
		bin := GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(bin, "nsc"), []byte(`#!/bin/sh
if [ "$1 $2 $3" = "generate profile nsc://op/acc/user" ]; then
	echo '{"user_creds":"/nsc/user.creds","operator":{"service":["nats://n1:4222","nats://n2:4222"]}}'
	exit 0
fi
echo "no such user: $3" >&2
exit 1
`), 0o755)).To(Succeed())
		GinkgoT().Setenv("PATH", bin)
	})

	DescribeTable("reads every file as natscontext does",
		func(doc string, wording ...string) {
			path := writeContext(home, "same", nil)
			Expect(os.WriteFile(path, []byte(doc), 0o600)).To(Succeed())
			got, err := natsconn.ReadContext("same")
			want, werr := natscontext.New("same", true)
			if werr != nil {
				Expect(err).To(MatchError(natsconn.ErrContext), "natscontext: %v", werr)
				Expect(err.Error()).To(HavePrefix(`nats context "same": ` + path + ": "))
				// The same error, in the same words unless ours names
				// the key where natscontext names its Go types.
				if len(wording) == 0 {
					wording = []string{werr.Error()}
				}
				Expect(err.Error()).To(HaveSuffix(wording[0]))
				return
			}
			Expect(err).ToNot(HaveOccurred())
			Expect(got).To(Equal(natsconn.Context{
				URL: want.ServerURL(), Creds: want.Creds(), NKey: want.NKey(),
				Cert: want.Certificate(), Key: want.Key(), CA: want.CA(),
				User: want.User(), Password: want.Password(), Token: want.Token(),
			}))
		},
		Entry("every field", `{"url":"nats://a:4222,nats://b:4222","creds":"/c.creds","nkey":"/n.nk","cert":"/c.pem","key":"/k.pem","ca":"/ca.pem","user":"u","password":"p","token":"t"}`),
		Entry("nothing: the default url", `{}`),
		Entry("null values", `{"url":null,"creds":null}`),
		Entry("~ and $VARs in paths", `{"creds":"~/x.creds","nkey":"$CCM_TEST_DIR/n.nk","cert":"~","key":"${CCM_TEST_DIR}/~/k","ca":"~other/ca.pem"}`),
		Entry("$VARs outside paths stay", `{"url":"nats://$CCM_TEST_DIR:4222","user":"~","password":"$CCM_TEST_DIR"}`),
		Entry("an unset $VAR", `{"creds":"$CCM_TEST_UNSET/x.creds"}`),
		Entry("a key twice", `{"url":"nats://a:4222","url":"nats://b:4222"}`),
		Entry("keys in another case", `{"URL":"nats://evil:4222","Creds":"/evil"}`),
		Entry("unknown keys", `{"description":"x","jetstream_domain":"hub","color_scheme":"red","tls_first":true,"url":"nats://a:4222"}`),
		Entry("not JSON", `url: nats://x`),
		Entry("a value of the wrong type", `{"url":4222}`, `key "url": a JSON number, not a string`),
		Entry("an array", `[]`, "a JSON array, not an object"),
		Entry("trailing data", `{"url":"nats://a:4222"} {}`),
		Entry("an nsc lookup", `{"nsc":"nsc://op/acc/user"}`),
		Entry("an nsc lookup without its scheme", `{"nsc":"op/acc/user"}`),
		Entry("an nsc lookup under the url and creds of the file", `{"nsc":"NSC://op/acc/user","url":"nats://mine:4222","creds":"/mine.creds"}`),
		Entry("an nsc lookup that fails", `{"nsc":"nsc://op/acc/nobody"}`),
	)

	It("says nsc is missing as the nats CLI does", func() {
		GinkgoT().Setenv("PATH", GinkgoT().TempDir())
		writeContext(home, "nsc", map[string]any{"nsc": "nsc://op/acc/user"})
		_, err := natsconn.ReadContext("nsc")
		_, werr := natscontext.New("nsc", true)
		Expect(werr).To(HaveOccurred())
		Expect(err).To(MatchError(ContainSubstring(werr.Error())))
		Expect(err.Error()).To(ContainSubstring("cannot find 'nsc' in user path"))
	})
})

var _ = Describe("SelectedContext", func() {
	It("reads the name `nats context select` wrote, trimmed", func() {
		home := useConfigHome()
		Expect(os.MkdirAll(filepath.Join(home, "nats"), 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(home, "nats", "context.txt"), []byte("ops\n"), 0o644)).To(Succeed())
		Expect(natsconn.SelectedContext()).To(Equal("ops"))
	})

	It("is empty, without error, when none is selected", func() {
		home := useConfigHome()
		Expect(natsconn.SelectedContext()).To(BeEmpty())
		Expect(os.MkdirAll(filepath.Join(home, "nats"), 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(home, "nats", "context.txt"), nil, 0o644)).To(Succeed())
		Expect(natsconn.SelectedContext()).To(BeEmpty())
	})

	It("follows a selection made in the nats CLI's own way", func() {
		useConfigHome()
		writeContext(os.Getenv("XDG_CONFIG_HOME"), "picked", map[string]any{"url": "nats://picked:4222"})
		Expect(natscontext.SelectContext("picked")).To(Succeed())
		Expect(natsconn.SelectedContext()).To(Equal("picked"))
	})
})

// userHome is the home directory the nats CLI expands ~ to: the user's,
// from the password database, not $HOME.
func userHome() string {
	GinkgoHelper()
	u, err := user.Current()
	Expect(err).NotTo(HaveOccurred())
	return u.HomeDir
}
