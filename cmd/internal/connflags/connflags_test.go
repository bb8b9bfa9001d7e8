package connflags_test

import (
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"

	"github.com/choria-io/fisk"
	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/cmd/internal/connflags"
	"github.com/ccm-fleet/ccm/natsconn"
)

var _ = Describe("Flags", func() {
	var home string

	BeforeEach(func() {
		home = GinkgoT().TempDir()
		GinkgoT().Setenv("XDG_CONFIG_HOME", home)
		for _, k := range []string{"CCM_SERVER", "CCM_INBOX_PREFIX", "NATS_URL", "NATS_CONTEXT"} {
			GinkgoT().Setenv(k, "")
			Expect(os.Unsetenv(k)).To(Succeed())
		}
	})

	// options parses args as a command's flags and returns its options
	// over base.
	options := func(base natsconn.Options, args ...string) (natsconn.Options, error) {
		GinkgoHelper()
		app := fisk.New("t", "")
		f := connflags.Register(app.Command("run", ""))
		_, err := app.Parse(append([]string{"run"}, args...))
		Expect(err).ToNot(HaveOccurred())
		return f.Options("conn", nil, base)
	}

	selectContext := func(name string) {
		GinkgoHelper()
		Expect(os.MkdirAll(filepath.Join(home, "nats"), 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(home, "nats", "context.txt"), []byte(name+"\n"), 0o644)).To(Succeed())
	}

	DescribeTable("takes each setting from the flag, its env, the base, then the NATS conventions",
		func(env map[string]string, selected string, base natsconn.Options, args []string, want natsconn.Options) {
			for k, v := range env {
				GinkgoT().Setenv(k, v)
			}
			if selected != "" {
				selectContext(selected)
			}
			o, err := options(base, args...)
			Expect(err).ToNot(HaveOccurred())
			want.Name = "conn"
			Expect(o).To(Equal(want))
		},
		Entry("nothing anywhere", nil, "", natsconn.Options{}, nil, natsconn.Options{}),
		Entry("-s wins over the base and NATS_URL",
			map[string]string{"NATS_URL": "nats://env:4222"}, "", natsconn.Options{Servers: "nats://file:4222"},
			[]string{"-s", "nats://flag:4222"}, natsconn.Options{Servers: "nats://flag:4222"}),
		Entry("CCM_SERVER wins over the base",
			map[string]string{"CCM_SERVER": "nats://ccm:4222"}, "", natsconn.Options{Servers: "nats://file:4222"},
			nil, natsconn.Options{Servers: "nats://ccm:4222"}),
		Entry("the base wins over NATS_URL",
			map[string]string{"NATS_URL": "nats://env:4222"}, "", natsconn.Options{Servers: "nats://file:4222"},
			nil, natsconn.Options{Servers: "nats://file:4222"}),
		Entry("NATS_URL when nothing else names servers",
			map[string]string{"NATS_URL": "nats://env:4222"}, "", natsconn.Options{},
			nil, natsconn.Options{Servers: "nats://env:4222"}),
		Entry("--context wins over the base, NATS_CONTEXT and the selection",
			map[string]string{"NATS_CONTEXT": "env"}, "selected", natsconn.Options{Context: "file"},
			[]string{"--context", "flag"}, natsconn.Options{Context: "flag"}),
		Entry("the base context wins over NATS_CONTEXT",
			map[string]string{"NATS_CONTEXT": "env"}, "selected", natsconn.Options{Context: "file"},
			nil, natsconn.Options{Context: "file"}),
		Entry("NATS_CONTEXT wins over the selection",
			map[string]string{"NATS_CONTEXT": "env"}, "selected", natsconn.Options{},
			nil, natsconn.Options{Context: "env"}),
		Entry("the context chosen with nats context select",
			nil, "selected", natsconn.Options{},
			nil, natsconn.Options{Context: "selected"}),
		Entry("--creds replaces the base's nkey as a whole",
			nil, "", natsconn.Options{NKey: "/file.nk"},
			[]string{"--creds", "/flag.creds"}, natsconn.Options{Creds: "/flag.creds"}),
		Entry("--tlscert and --tlskey replace the base's pair; the base's CA stays",
			nil, "", natsconn.Options{TLSCert: "/f.pem", TLSKey: "/f.key", TLSCA: "/ca.pem"},
			[]string{"--tlscert", "/c.pem", "--tlskey", "/k.pem"}, natsconn.Options{TLSCert: "/c.pem", TLSKey: "/k.pem", TLSCA: "/ca.pem"}),
		Entry("CCM_INBOX_PREFIX wins over the base",
			map[string]string{"CCM_INBOX_PREFIX": "_INBOX.env"}, "", natsconn.Options{InboxPrefix: "_INBOX.file"},
			nil, natsconn.Options{InboxPrefix: "_INBOX.env"}),
	)

	It("resolves NATS_URL ahead of the selected context's url, and takes the context's credentials", func() {
		Expect(os.MkdirAll(filepath.Join(home, "nats", "context"), 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(home, "nats", "context", "ops.json"),
			[]byte(`{"url": "nats://ctx:4222", "creds": "/ops.creds"}`), 0o600)).To(Succeed())
		selectContext("ops")
		o, err := options(natsconn.Options{})
		Expect(err).ToNot(HaveOccurred())
		r, err := o.Resolve()
		Expect(err).ToNot(HaveOccurred())
		Expect(r.Servers).To(Equal("nats://ctx:4222"))
		Expect(r.Creds).To(Equal("/ops.creds"))

		GinkgoT().Setenv("NATS_URL", "nats://env:4222")
		o, err = options(natsconn.Options{})
		Expect(err).ToNot(HaveOccurred())
		r, err = o.Resolve()
		Expect(err).ToNot(HaveOccurred())
		Expect(r.Servers).To(Equal("nats://env:4222"))
		Expect(r.Creds).To(Equal("/ops.creds"))
	})

	It("has -s as the short form of --server", func() {
		o, err := options(natsconn.Options{}, "-s", "nats://a:4222,nats://b:4222")
		Expect(err).ToNot(HaveOccurred())
		Expect(o.Servers).To(Equal("nats://a:4222,nats://b:4222"))
	})
})

var _ = Describe("Flags.Explain", func() {
	BeforeEach(func() {
		home := GinkgoT().TempDir()
		GinkgoT().Setenv("XDG_CONFIG_HOME", home)
		for _, k := range []string{"CCM_SERVER", "NATS_URL", "NATS_CONTEXT"} {
			GinkgoT().Setenv(k, "")
			Expect(os.Unsetenv(k)).To(Succeed())
		}
		Expect(os.MkdirAll(filepath.Join(home, "nats", "context"), 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(home, "nats", "context", "bare.json"), []byte(`{}`), 0o600)).To(Succeed())
	})

	connectErr := fmt.Errorf("%w at nats://127.0.0.1:4222: nats: no servers available for connection", natsconn.ErrConnect)

	explain := func(base natsconn.Options, args ...string) error {
		GinkgoHelper()
		app := fisk.New("t", "")
		f := connflags.Register(app.Command("run", ""))
		_, err := app.Parse(append([]string{"run"}, args...))
		Expect(err).ToNot(HaveOccurred())
		o, err := f.Options("conn", nil, base)
		Expect(err).ToNot(HaveOccurred())
		return f.Explain(connectErr, o, base, "the configuration file's servers")
	}

	It("says what to try by the cause: a certificate that did not verify, refused credentials, no server", func() {
		app := fisk.New("t", "")
		f := connflags.Register(app.Command("run", ""))
		_, err := app.Parse([]string{"run", "--server", "tls://10.0.0.1:4222"})
		Expect(err).ToNot(HaveOccurred())
		o, err := f.Options("conn", nil, natsconn.Options{})
		Expect(err).ToNot(HaveOccurred())
		cert := fmt.Errorf("%w at tls://10.0.0.1:4222: %w", natsconn.ErrConnect, x509.UnknownAuthorityError{})
		Expect(f.Explain(cert, o, natsconn.Options{}, "").Error()).To(HaveSuffix("(URL from --server); the server's certificate did not verify: give the CA that signed it with --tlsca (or the context's ca), and a URL with the host name the certificate names"))
		auth := fmt.Errorf("%w at tls://10.0.0.1:4222: %w", natsconn.ErrConnect, nats.ErrAuthorization)
		Expect(f.Explain(auth, o, natsconn.Options{}, "").Error()).To(HaveSuffix("(URL from --server); the server refused the credentials: check --creds or --nkey (or the context's user), and that the server's accounts list this user"))
		Expect(f.Explain(connectErr, o, natsconn.Options{}, "").Error()).To(HaveSuffix("(URL from --server); is a NATS server running and reachable there? give another with --server URL (or CCM_SERVER, NATS_URL) or --context NAME"))
	})

	It("names the default when nothing named a server", func() {
		err := explain(natsconn.Options{})
		Expect(err).To(MatchError(natsconn.ErrConnect))
		Expect(err.Error()).To(Equal("cannot connect to NATS at nats://127.0.0.1:4222: nats: no servers available for connection (URL from the default, as no --server, CCM_SERVER, NATS_URL or nats context was given); is a NATS server running and reachable there? give another with --server URL (or CCM_SERVER, NATS_URL) or --context NAME"))
	})

	It("names the context and what named it", func() {
		Expect(explain(natsconn.Options{}, "--context", "bare")).To(MatchError(ContainSubstring(`(URL from nats context "bare", named by --context)`)))
		Expect(explain(natsconn.Options{Context: "bare"})).To(MatchError(ContainSubstring(`(URL from nats context "bare", named by the configuration)`)))
		GinkgoT().Setenv("NATS_CONTEXT", "bare")
		Expect(explain(natsconn.Options{})).To(MatchError(ContainSubstring(`(URL from nats context "bare", named by NATS_CONTEXT)`)))
	})

	It("names the base's servers by the caller's name", func() {
		Expect(explain(natsconn.Options{Servers: "nats://file:4222"})).To(MatchError(ContainSubstring("(URL from the configuration file's servers)")))
	})

	It("leaves other errors as they are", func() {
		app := fisk.New("t", "")
		f := connflags.Register(app.Command("run", ""))
		other := fmt.Errorf("%w: bad", natsconn.ErrCredentials)
		Expect(f.Explain(other, natsconn.Options{}, natsconn.Options{}, "")).To(BeIdenticalTo(other))
	})
})
