package integration_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/sources"
)

// Assignments that name a signed bundle in the object store (ccm-orch
// assign --bundle) instead of carrying the manifest, with the real
// ccm-agent run and ccm-orch: the agent fetches the bundle, checks it is
// the one assigned, verifies its signature and judges its signer and its
// resources with its policy, as for an inline manifest.
var _ = Describe("Assignments of object store bundles", Ordered, func() {
	const identity = "bundle-1"
	var (
		dir, target, url string
		ops, stranger    signingKey
		js               jetstream.JetStream
		agentProc        *gexec.Session
	)

	BeforeAll(func() {
		dir = GinkgoT().TempDir()
		target = filepath.Join(dir, "target")
		Expect(os.Mkdir(target, 0o755)).To(Succeed())
		ops, stranger = newSigningKey(dir, "ops"), newSigningKey(dir, "stranger")
		policy := policyFile(dir, signerEntry("ops", ops.pub, "file"))
		b := brokertest.Start(GinkgoT())
		url = b.ClientURL()
		code, out, errOut := runOrch("history", "init", "--server", url)
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(ContainSubstring("ccm-manifests"))
		nc, err := nats.Connect(url)
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		js, err = jetstream.New(nc)
		Expect(err).ToNot(HaveOccurred())
		agentProc = startProcess(ccmAgentBin(), "-v", "run", "--server", url, "--identity", identity, "--policy", policy,
			"--state-dir", filepath.Join(dir, identity), "--fact", "role=web")
		Eventually(agentProc.Err).WithTimeout(20 * time.Second).Should(gbytes.Say("serving"))
	})

	// bundleDir writes a bundle directory whose manifest is doc, with
	// files (relative path to content) beside it.
	bundleDir := func(name, doc string, files map[string]string) string {
		GinkgoHelper()
		d := filepath.Join(dir, "bundles", name)
		Expect(os.MkdirAll(d, 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(d, sources.ManifestFile), []byte(doc), 0o644)).To(Succeed())
		for p, c := range files {
			Expect(os.WriteFile(filepath.Join(d, p), []byte(c), 0o644)).To(Succeed())
		}
		return d
	}
	fileDoc := func(path, source string) string {
		return fmt.Sprintf("ccm:\n  resources:\n    - file:\n        - %q:\n            source: %s\n            owner: root\n            group: root\n            mode: \"0644\"\n", path, source)
	}
	put := func(d, key string, signer signingKey) {
		GinkgoHelper()
		code, out, errOut := runOrch("manifest", "put", d, "obj://ccm-manifests/"+key, "--key", signer.seedFile, "--server", url)
		Expect(code).To(Equal(0), out+errOut)
	}
	assign := func(name, key string) string {
		GinkgoHelper()
		code, out, errOut := runOrch("assign", name, "--bundle", "obj://ccm-manifests/"+key, "--host", identity, "--interval", "1h", "--key", ops.seedFile, "--server", url)
		Expect(code).To(Equal(0), out+errOut)
		return out + errOut
	}
	errorsOf := func(name string) func() []string {
		return func() []string {
			var out []string
			for _, r := range assignmentRuns(js, identity, name) {
				if r.Reply.Error != nil {
					out = append(out, string(r.Reply.Error.Code)+": "+r.Reply.Error.Message)
				}
			}
			return out
		}
	}
	exists := func(path string) func() bool {
		return func() bool { _, err := os.Stat(path); return err == nil }
	}

	It("applies a signed bundle and the files it carries; history records the run and status shows the host converged", func() {
		path := filepath.Join(target, "site.conf")
		put(bundleDir("site", fileDoc(path, "site.conf"), map[string]string{"site.conf": "from the bundle\n"}), "site.tar.gz", ops)

		out := assign("site", "site.tar.gz")
		Expect(out).To(ContainSubstring("assignment site revision"))
		Eventually(func() ([]byte, error) { return os.ReadFile(path) }).WithTimeout(30 * time.Second).Should(Equal([]byte("from the bundle\n")))
		Eventually(func() []assignmentRun { return assignmentRuns(js, identity, "site") }).WithTimeout(20 * time.Second).Should(ContainElement(And(
			HaveField("Reply.Error", BeNil()), HaveField("Reply.Events", ContainElement(HaveField("Name", path))))))
		Eventually(func() string {
			_, out, _ := runOrch("status", "--assignment", "site", "--server", url)
			return out
		}).WithTimeout(20 * time.Second).Should(ContainSubstring("1 hosts: 1 converged"))
		_, shown, _ := runOrch("assignments", "show", "site", "--server", url)
		Expect(shown).To(MatchRegexp(`bundle: +obj://ccm-manifests/site\.tar\.gz \(sha256 [0-9a-f]{64}\)`))
	})

	It("carries a manifest larger than the broker's max_payload through an obj:// bundle, which the same manifest inline cannot be", func() {
		maxPayload := js.Conn().MaxPayload()
		Expect(maxPayload).To(BeNumerically(">", 0))
		// Random bytes do not compress: the bundle itself is larger than
		// one message, so it travels in object store chunks.
		payload := make([]byte, maxPayload+maxPayload/2)
		_, err := rand.Read(payload)
		Expect(err).ToNot(HaveOccurred())
		path := filepath.Join(target, "large.bin")
		d := bundleDir("large", fileDoc(path, "large.bin"), map[string]string{"large.bin": string(payload)})
		put(d, "large.tar.gz", ops)
		obs, err := js.ObjectStore(context.Background(), "ccm-manifests")
		Expect(err).ToNot(HaveOccurred())
		info, err := obs.GetInfo(context.Background(), "large.tar.gz")
		Expect(err).ToNot(HaveOccurred())
		Expect(info.Size).To(BeNumerically(">", maxPayload), "the bundle is larger than the broker's max_payload")

		// Inline, the manifest and its file do not fit one message.
		code, out, errOut := runOrch("assign", "large-inline", filepath.Join(d, sources.ManifestFile), "--host", identity, "--interval", "1h", "--key", ops.seedFile, "--server", url)
		Expect(code).ToNot(Equal(0), out+errOut)
		GinkgoWriter.Printf("inline assign of the large manifest: %s\n", errOut)

		assign("large", "large.tar.gz")
		Eventually(func() ([]byte, error) { return os.ReadFile(path) }).WithTimeout(60 * time.Second).Should(Equal(payload))
		Eventually(func() []assignmentRun { return assignmentRuns(js, identity, "large") }).WithTimeout(20 * time.Second).Should(ContainElement(And(
			HaveField("Reply.Error", BeNil()), HaveField("Reply.Events", ContainElement(HaveField("Name", path))))))
	})

	It("refuses a bundle missing from the object store: ccm-orch assign says so, and an assignment naming one anyway is refused in history", func() {
		code, _, errOut := runOrch("assign", "absent", "--bundle", "obj://ccm-manifests/absent.tar.gz", "--host", identity, "--key", ops.seedFile, "--server", url)
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("obj://ccm-manifests/absent.tar.gz"))

		nc, err := nats.Connect(url)
		Expect(err).ToNot(HaveOccurred())
		defer nc.Close()
		_, err = orchestrator.New(nc).Assign(context.Background(), &protocol.Assignment{
			Protocol: protocol.AssignmentProtocol, Name: "absent", Targets: []string{identity}, Interval: protocol.Duration(time.Hour),
			Bundle: &protocol.AssignmentBundle{URL: "obj://ccm-manifests/absent.tar.gz", SHA256: strings.Repeat("ab", 32)},
		}, ops.kp)
		Expect(err).ToNot(HaveOccurred())
		Eventually(errorsOf("absent")).WithTimeout(20 * time.Second).Should(ContainElement(
			Equal("bad_request: bundle obj://ccm-manifests/absent.tar.gz: not found in the object store: nothing was run")))
		Eventually(func() string {
			_, out, _ := runOrch("status", "--assignment", "absent", "--server", url)
			return out
		}).WithTimeout(20 * time.Second).Should(ContainSubstring("failed: " + identity + ": bundle obj://ccm-manifests/absent.tar.gz: not found in the object store"))
	})

	It("never applies a bundle whose signature does not verify, or whose signer the policy does not trust", func() {
		canary := fmt.Sprintf("CANARY-BUNDLE-FORGED-%d", time.Now().UnixNano())
		forged := filepath.Join(target, "forged.conf")
		d := bundleDir("forged", fileDoc(forged, "payload"), map[string]string{"payload": canary})
		// Signed by ops, but for another name: stored by a raw client under
		// this one, the signature does not verify.
		data, err := sources.Pack(d)
		Expect(err).ToNot(HaveOccurred())
		sig, err := sources.SignBundle(data, "obj://ccm-manifests/other.tar.gz", time.Now(), ops.kp)
		Expect(err).ToNot(HaveOccurred())
		obs, err := js.ObjectStore(context.Background(), "ccm-manifests")
		Expect(err).ToNot(HaveOccurred())
		_, err = obs.Put(context.Background(), jetstream.ObjectMeta{Name: "forged.tar.gz", Metadata: sig.Metadata()}, bytes.NewReader(data))
		Expect(err).ToNot(HaveOccurred())
		assign("forged", "forged.tar.gz")
		Eventually(errorsOf("forged")).WithTimeout(20 * time.Second).Should(ContainElement(And(
			HavePrefix("unauthenticated: bundle obj://ccm-manifests/forged.tar.gz: "), ContainSubstring("signature"))))

		untrusted := filepath.Join(target, "untrusted.conf")
		put(bundleDir("untrusted", fileDoc(untrusted, "payload"), map[string]string{"payload": canary}), "untrusted.tar.gz", stranger)
		assign("untrusted", "untrusted.tar.gz")
		Eventually(errorsOf("untrusted")).WithTimeout(20 * time.Second).Should(ContainElement(
			Equal(fmt.Sprintf("unauthenticated: bundle obj://ccm-manifests/untrusted.tar.gz: signer %s is not trusted by this agent's policy", stranger.pub))))

		Consistently(exists(forged)).WithTimeout(3 * time.Second).Should(BeFalse())
		Expect(exists(untrusted)()).To(BeFalse())
		Expect(agentProc.Err.Contents()).ToNot(ContainSubstring(canary))
	})

	It("refuses a bundle signed for one location at another: the signature covers the bucket and key, not the base name alone", func() {
		ctx := context.Background()
		canary := fmt.Sprintf("CANARY-BUNDLE-MOVED-%d", time.Now().UnixNano())
		path := filepath.Join(target, "web.conf")
		put(bundleDir("web", fileDoc(path, "payload"), map[string]string{"payload": canary + "\n"}), "staging/web.tar.gz", ops)

		// The normal case: applied from where it was signed for.
		assign("web-staging", "staging/web.tar.gz")
		Eventually(func() ([]byte, error) { return os.ReadFile(path) }).WithTimeout(30 * time.Second).Should(Equal([]byte(canary + "\n")))
		Expect(os.Remove(path)).To(Succeed())

		// The same object, its signature metadata included, copied to
		// another bucket and key with the same base name.
		src, err := js.ObjectStore(ctx, "ccm-manifests")
		Expect(err).ToNot(HaveOccurred())
		info, err := src.GetInfo(ctx, "staging/web.tar.gz")
		Expect(err).ToNot(HaveOccurred())
		Expect(info.Metadata).To(HaveKeyWithValue(sources.MetaLocation, "obj://ccm-manifests/staging/web.tar.gz"))
		data, err := src.GetBytes(ctx, "staging/web.tar.gz")
		Expect(err).ToNot(HaveOccurred())
		other, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "other"})
		Expect(err).ToNot(HaveOccurred())
		_, err = other.Put(ctx, jetstream.ObjectMeta{Name: "prod/web.tar.gz", Metadata: info.Metadata}, bytes.NewReader(data))
		Expect(err).ToNot(HaveOccurred())

		code, out, errOut := runOrch("assign", "web-prod", "--bundle", "obj://other/prod/web.tar.gz", "--host", identity, "--interval", "1h", "--key", ops.seedFile, "--server", url)
		Expect(code).To(Equal(0), out+errOut)
		Eventually(errorsOf("web-prod")).WithTimeout(20 * time.Second).Should(ContainElement(
			`unauthenticated: bundle obj://other/prod/web.tar.gz: bundle signature does not verify: signed for "obj://ccm-manifests/staging/web.tar.gz", fetched from "obj://other/prod/web.tar.gz": a bundle runs only from the location it was signed for`))
		Consistently(exists(path)).WithTimeout(3 * time.Second).Should(BeFalse())
		// ccm-orch assign said so already.
		Expect(errOut).To(ContainSubstring(`warning: bundle obj://other/prod/web.tar.gz: bundle signature does not verify: signed for "obj://ccm-manifests/staging/web.tar.gz", fetched from "obj://other/prod/web.tar.gz"`))
	})

	It("refuses a bundle with a resource its signer may not use, applying none of it", func() {
		canary := fmt.Sprintf("CANARY-BUNDLE-EXEC-%d", time.Now().UnixNano())
		first, ran := filepath.Join(target, "first.conf"), filepath.Join(target, "exec-ran")
		doc := fmt.Sprintf("ccm:\n  resources:\n    - file:\n        - %q:\n            content: %q\n            owner: root\n            group: root\n            mode: \"0644\"\n    - exec:\n        - \"/bin/sh -c 'echo %s > %s'\": {}\n", first, canary, canary, ran)
		put(bundleDir("exec", doc, nil), "exec.tar.gz", ops)
		assign("exec", "exec.tar.gz")
		Eventually(errorsOf("exec")).WithTimeout(20 * time.Second).Should(ContainElement(And(
			HavePrefix("forbidden: "), ContainSubstring("exec"))))
		Consistently(exists(ran)).WithTimeout(3 * time.Second).Should(BeFalse())
		Expect(exists(first)()).To(BeFalse(), "nothing of a refused bundle is applied")
	})

	It("keeps an assignment to the exact bundle assigned: one replaced in the store since is refused when the agent reads it again", func() {
		path := filepath.Join(target, "pinned.conf")
		d := bundleDir("pinned", fileDoc(path, "payload"), map[string]string{"payload": "assigned\n"})
		put(d, "pinned.tar.gz", ops)
		assign("pinned", "pinned.tar.gz")
		Eventually(func() ([]byte, error) { return os.ReadFile(path) }).WithTimeout(30 * time.Second).Should(Equal([]byte("assigned\n")))

		Expect(os.WriteFile(filepath.Join(d, "payload"), []byte("replaced\n"), 0o644)).To(Succeed())
		put(d, "pinned.tar.gz", ops)
		agentProc.Interrupt()
		Eventually(agentProc).WithTimeout(30 * time.Second).Should(gexec.Exit())
		Expect(os.Remove(path)).To(Succeed())
		agentProc = startProcess(ccmAgentBin(), "-v", "run", "--server", url, "--identity", identity, "--policy", filepath.Join(dir, "policy.yaml"),
			"--state-dir", filepath.Join(dir, identity), "--fact", "role=web")
		Eventually(agentProc.Err).WithTimeout(20 * time.Second).Should(gbytes.Say("serving"))
		Eventually(errorsOf("pinned")).WithTimeout(20 * time.Second).Should(ContainElement(And(
			HavePrefix("unauthenticated: bundle obj://ccm-manifests/pinned.tar.gz: its sha256 is "), ContainSubstring("replaced since it was assigned"))))
		Expect(exists(path)()).To(BeFalse())
	})
})
