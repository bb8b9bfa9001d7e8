package natsconn_test

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func writeCreds(dir string, account nkeys.KeyPair) string {
	GinkgoHelper()
	ukp, err := nkeys.CreateUser()
	Expect(err).NotTo(HaveOccurred())
	upub, err := ukp.PublicKey()
	Expect(err).NotTo(HaveOccurred())
	token, err := jwt.NewUserClaims(upub).Encode(account)
	Expect(err).NotTo(HaveOccurred())
	seed, err := ukp.Seed()
	Expect(err).NotTo(HaveOccurred())
	creds, err := jwt.FormatUserConfig(token, seed)
	Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(dir, upub[:8]+".creds")
	Expect(os.WriteFile(path, creds, 0o600)).To(Succeed())
	return path
}

// writeSeed writes a user nkey seed file and returns its path and the
// user's public key.
func writeSeed(dir string) (string, string) {
	GinkgoHelper()
	ukp, err := nkeys.CreateUser()
	Expect(err).NotTo(HaveOccurred())
	seed, err := ukp.Seed()
	Expect(err).NotTo(HaveOccurred())
	pub, err := ukp.PublicKey()
	Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(dir, pub[:8]+".nk")
	Expect(os.WriteFile(path, seed, 0o600)).To(Succeed())
	return path, pub
}

// operatorServer starts a nats-server in operator (JWT) mode trusting one
// account, and returns its URL and that account's signing key pair.
func operatorServer() (string, nkeys.KeyPair) {
	GinkgoHelper()
	okp, err := nkeys.CreateOperator()
	Expect(err).NotTo(HaveOccurred())
	opub, err := okp.PublicKey()
	Expect(err).NotTo(HaveOccurred())
	akp, err := nkeys.CreateAccount()
	Expect(err).NotTo(HaveOccurred())
	apub, err := akp.PublicKey()
	Expect(err).NotTo(HaveOccurred())
	ajwt, err := jwt.NewAccountClaims(apub).Encode(okp)
	Expect(err).NotTo(HaveOccurred())
	resolver := &server.MemAccResolver{}
	Expect(resolver.Store(apub, ajwt)).To(Succeed())
	url := authServer(func(o *server.Options) {
		o.TrustedKeys = []string{opub}
		o.AccountResolver = resolver
	})
	return url, akp
}

// authServer starts a plain nats-server configured by configure (for
// authentication the broker package does not offer) and returns its URL.
func authServer(configure func(*server.Options)) string {
	GinkgoHelper()
	opts := &server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true}
	configure(opts)
	s, err := server.NewServer(opts)
	Expect(err).NotTo(HaveOccurred())
	s.Start()
	DeferCleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	Expect(s.ReadyForConnections(10 * time.Second)).To(BeTrue())
	return s.ClientURL()
}

// useConfigHome points XDG_CONFIG_HOME at a fresh directory for this spec.
func useConfigHome() string {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	GinkgoT().Setenv("XDG_CONFIG_HOME", dir)
	return dir
}

// writeContext writes a nats CLI context file into configHome.
func writeContext(configHome, name string, fields map[string]any) string {
	GinkgoHelper()
	dir := filepath.Join(configHome, "nats", "context")
	Expect(os.MkdirAll(dir, 0o700)).To(Succeed())
	data, err := json.Marshal(fields)
	Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(dir, name+".json")
	Expect(os.WriteFile(path, data, 0o600)).To(Succeed())
	return path
}

// freeAddr returns a 127.0.0.1 address nobody listens on.
func freeAddr() string {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().String()
}
