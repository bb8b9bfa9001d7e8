package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("ccm-orch keys new", func() {
	It("writes the seed (0600) and the public key (0644), prints both paths and the key, and never overwrites", func() {
		dir := GinkgoT().TempDir()
		var out, errOut bytes.Buffer
		Expect(run([]string{"keys", "new", "ops", "--dir", dir}, &out, &errOut)).To(Equal(0), errOut.String())
		seedPath, pubPath := filepath.Join(dir, "ops.seed"), filepath.Join(dir, "ops.pub")
		fi, err := os.Stat(seedPath)
		Expect(err).ToNot(HaveOccurred())
		Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o600)))
		fi, err = os.Stat(pubPath)
		Expect(err).ToNot(HaveOccurred())
		Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o644)))
		pub, err := os.ReadFile(pubPath)
		Expect(err).ToNot(HaveOccurred())
		Expect(string(pub)).To(HaveSuffix("\n"))
		key := strings.TrimSpace(string(pub))
		Expect(nkeys.IsValidPublicUserKey(key)).To(BeTrue())
		Expect(out.String()).To(ContainSubstring(seedPath))
		Expect(out.String()).To(ContainSubstring(pubPath))
		Expect(out.String()).To(ContainSubstring(key))

		kp, err := loadSeed(seedPath)
		Expect(err).ToNot(HaveOccurred())
		got, _ := kp.PublicKey()
		Expect(got).To(Equal(key))

		before, _ := os.ReadFile(seedPath)
		out.Reset()
		errOut.Reset()
		Expect(run([]string{"keys", "new", "ops", "--dir", dir}, &out, &errOut)).To(Equal(1))
		Expect(errOut.String()).To(ContainSubstring("already exists, not overwriting it"))
		after, _ := os.ReadFile(seedPath)
		Expect(after).To(Equal(before))
	})

	It("refuses a name that is not a plain file name", func() {
		var out, errOut bytes.Buffer
		Expect(run([]string{"keys", "new", "../ops", "--dir", GinkgoT().TempDir()}, &out, &errOut)).To(Equal(1))
		Expect(errOut.String()).To(ContainSubstring(`name "../ops"`))
	})

	It("refuses a --key that is not a seed or is readable by others, before connecting", func() {
		dir := GinkgoT().TempDir()
		pub := filepath.Join(dir, "x.pub")
		kp, _ := nkeys.CreateUser()
		p, _ := kp.PublicKey()
		Expect(os.WriteFile(pub, []byte(p), 0o600)).To(Succeed())
		var out, errOut bytes.Buffer
		code := run([]string{"ensure", "file", "/tmp/x", "--owner", "root", "--group", "root", "--mode", "0644", "--key", pub, "--server", "nats://127.0.0.1:1"}, &out, &errOut)
		Expect(code).To(Equal(1))
		Expect(errOut.String()).To(ContainSubstring("x.pub: this is a public key, which can only verify; --key needs the seed"))
		Expect(errOut.String()).ToNot(ContainSubstring("connect"))
	})

	It("says a public key file is a public key before finding its mode too wide for a seed", func() {
		dir := GinkgoT().TempDir()
		pub := filepath.Join(dir, "ops.pub")
		kp, _ := nkeys.CreateUser()
		p, _ := kp.PublicKey()
		Expect(os.WriteFile(pub, []byte(p+"\n"), 0o644)).To(Succeed())
		var out, errOut bytes.Buffer
		code := run([]string{"ensure", "file", "/tmp/x", "--owner", "root", "--group", "root", "--mode", "0644", "--key", pub, "--server", "nats://127.0.0.1:1"}, &out, &errOut)
		Expect(code).To(Equal(1))
		Expect(errOut.String()).To(ContainSubstring("ops.pub: this is a public key"))
		Expect(errOut.String()).To(ContainSubstring("NAME.seed"))
		Expect(errOut.String()).ToNot(ContainSubstring("chmod"))
	})

	It("still refuses a garbage key file as not a seed", func() {
		dir := GinkgoT().TempDir()
		bad := filepath.Join(dir, "x.seed")
		Expect(os.WriteFile(bad, []byte("not a key\n"), 0o600)).To(Succeed())
		var out, errOut bytes.Buffer
		code := run([]string{"ensure", "file", "/tmp/x", "--owner", "root", "--group", "root", "--mode", "0644", "--key", bad, "--server", "nats://127.0.0.1:1"}, &out, &errOut)
		Expect(code).To(Equal(1))
		Expect(errOut.String()).To(ContainSubstring("not an nkeys seed"))
	})
})
