package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/ccm-fleet/ccm/orchestrator/fleettest"
)

// The rough edges a new operator hits first (issue 42), with the real
// binary against a real fleet.
var _ = Describe("ccm-orch for a new operator", Ordered, func() {
	var (
		bin, xdg string
		fl       *fleettest.Fleet
	)
	BeforeAll(func() {
		bin = buildOrch(GinkgoT().TempDir())
		fl = fleettest.StartWith(GinkgoT(), fleettest.Options{History: true}, 2, map[string]any{"role": "web"}, "os=debian,rhel")
		// A nats CLI context "prod" naming the fleet, as `nats context
		// save prod --server URL` writes it.
		xdg = GinkgoT().TempDir()
		Expect(os.MkdirAll(filepath.Join(xdg, "nats", "context"), 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(xdg, "nats", "context", "prod.json"), []byte(`{"url": "`+fl.URL()+`"}`), 0o600)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(xdg, "nats", "context", "broken.json"), []byte(`{"url": "nats://127.0.0.1:1"}`), 0o600)).To(Succeed())
	})

	// orch runs the binary with args and env added to a clean
	// environment (no NATS_URL, CCM_SERVER or selected context of the
	// machine) and returns its exit code, stdout and stderr.
	orch := func(env []string, args ...string) (int, string, string) {
		GinkgoHelper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + xdg, "XDG_CONFIG_HOME=" + xdg, "CCM_KEY=" + suiteKey}, env...)
		s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(s).WithTimeout(fleetTimeout).Should(gexec.Exit())
		return s.ExitCode(), string(s.Out.Contents()), string(s.Err.Contents())
	}

	DescribeTable("takes the connection flags before the command as after it",
		func(args func() []string, want ...string) {
			code, out, errOut := orch(nil, args()...)
			Expect(errOut).To(BeEmpty())
			Expect(code).To(Equal(0))
			for _, w := range want {
				Expect(out).To(ContainSubstring(w))
			}
		},
		Entry("--context NAME, as docs/operator-guide.md writes it", func() []string { return []string{"--context", "prod", "discover"} }, "sim-0001", "sim-0002"),
		Entry("--context=NAME with global flags around it", func() []string { return []string{"-v", "--context=prod", "--log-level", "warn", "discover"} }, "sim-0001", "sim-0002"),
		Entry("-s URL", func() []string { return []string{"-s", fl.URL(), "discover", "--where", "role=web"} }, "sim-0001", "sim-0002"),
		Entry("--server URL before a command two words long", func() []string { return []string{"--server", fl.URL(), "history", "list"} }, "no requests"),
		Entry("after the command, as before", func() []string { return []string{"discover", "--context", "prod"} }, "sim-0001", "sim-0002"),
	)

	It("refuses conditions joined by a space in one --where before connecting, naming the repeated flag", func() {
		code, out, errOut := orch([]string{"NATS_URL=nats://127.0.0.1:1"}, "discover", "--where", "os=debian role=web")
		Expect(code).To(Equal(1))
		Expect(out).To(BeEmpty())
		Expect(errOut).To(Equal(`ccm-orch: filter "os=debian role=web": one condition per --where: write --where os=debian --where role=web (to match a value holding " role=web", use =~ with a regular expression)` + "\n"))

		// The spelling it names works.
		code, out, _ = orch(nil, "--context", "prod", "discover", "--where", "os=debian", "--where", "role=web")
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("sim-0001"))
		Expect(out).NotTo(ContainSubstring("sim-0002"))
	})

	DescribeTable("reads a signed duration as the flag's value, with or without =",
		func(args []string, want string) {
			code, out, errOut := orch([]string{"NATS_URL=nats://127.0.0.1:1"}, append([]string{"ensure", "exec", "/bin/true"}, args...)...)
			Expect(code).To(Equal(1))
			Expect(out).To(BeEmpty())
			Expect(errOut).To(Equal("ccm-orch: error: " + want + " (see ccm-orch --help)\n"))
		},
		Entry("--ttl -1m", []string{"--ttl", "-1m"}, "--ttl -1m is negative: give 0 or more"),
		Entry("--ttl=-1m", []string{"--ttl=-1m"}, "--ttl -1m is negative: give 0 or more"),
		Entry("--reply-timeout -5s", []string{"--reply-timeout", "-5s"}, "--reply-timeout -5s is negative: give 0 or more"),
		Entry("--batch-sleep -1.5s", []string{"--batch-sleep", "-1.5s"}, "--batch-sleep -1.5s is negative: give 0 or more"),
	)

	It("runs with a duration given a plus sign", func() {
		code, _, errOut := orch(nil, "ensure", "exec", "/bin/true", "--ttl", "+2m", "--reply-timeout", "+20s", "--context", "prod")
		Expect(errOut).To(BeEmpty())
		Expect(code).To(Equal(0))
	})

	DescribeTable("suggests the flag a typo meant",
		func(args []string, want string) {
			code, out, errOut := orch([]string{"NATS_URL=nats://127.0.0.1:1"}, args...)
			Expect(code).To(Equal(1))
			Expect(out).To(BeEmpty())
			Expect(errOut).To(Equal("ccm-orch: error: " + want + " (see ccm-orch --help)\n"))
		},
		Entry("--wher", []string{"discover", "--wher", "os=debian"}, "unknown flag --wher; did you mean --where?"),
		Entry("--reply-timout=", []string{"ensure", "exec", "/bin/true", "--reply-timout=5s"}, "unknown flag --reply-timout; did you mean --reply-timeout?"),
		Entry("a global flag", []string{"--verbos", "discover"}, "unknown flag --verbos; did you mean --verbose?"),
	)

	It("keeps fisk's message for an unknown flag near none", func() {
		code, _, errOut := orch(nil, "discover", "--zzzzzz")
		Expect(code).To(Equal(1))
		Expect(errOut).To(Equal("ccm-orch: error: unknown long flag '--zzzzzz' (see ccm-orch --help)\n"))
	})

	DescribeTable("says where the URL of a failed connection came from and what to try",
		func(env, args []string, from string) {
			code, _, errOut := orch(env, append([]string{"discover"}, args...)...)
			Expect(code).To(Equal(1))
			Expect(errOut).To(HavePrefix("ccm-orch: cannot connect to NATS at nats://127.0.0.1:"))
			Expect(errOut).To(ContainSubstring("(URL from " + from + "); is a NATS server running and reachable there? give another with --server URL (or CCM_SERVER, NATS_URL) or --context NAME\n"))
			Expect(strings.Count(errOut, "\n")).To(Equal(1))
		},
		Entry("--server", nil, []string{"--server", "nats://127.0.0.1:1"}, "--server"),
		Entry("CCM_SERVER", []string{"CCM_SERVER=nats://127.0.0.1:1", "NATS_URL=nats://127.0.0.1:2"}, nil, "CCM_SERVER"),
		Entry("NATS_URL", []string{"NATS_URL=nats://127.0.0.1:1"}, nil, "NATS_URL"),
		Entry("NATS_URL over a context", []string{"NATS_URL=nats://127.0.0.1:1", "NATS_CONTEXT=prod"}, nil, "NATS_URL"),
		Entry("a context's url, named by --context", nil, []string{"--context", "broken"}, `nats context "broken", named by --context`),
		Entry("a context's url, named by NATS_CONTEXT", []string{"NATS_CONTEXT=broken"}, nil, `nats context "broken", named by NATS_CONTEXT`),
	)

	It("says a request id that history holds nothing for is unknown", func() {
		code, out, errOut := orch(nil, "--context", "prod", "history", "show", "UNKNOWN_ID")
		Expect(code).To(Equal(1))
		Expect(out).To(BeEmpty())
		Expect(errOut).To(Equal("ccm-orch: request UNKNOWN_ID is unknown: history holds no request record and no host records for it; check the id (ccm-orch history list shows the requests history holds; a request that ran while the store was full or history was unavailable is not among them)\n"))
		Expect(errOut).NotTo(ContainSubstring("may not have been kept"))
	})

	It("names a manifest's file and the line of its YAML fault, before connecting", func() {
		dir := GinkgoT().TempDir()
		path := filepath.Join(dir, "site.yaml")
		Expect(os.WriteFile(path, []byte("ccm:\n  resources:\n    - file:\n        /tmp/motd:\n          ensure: present\n          owner: root\n         content: x\n"), 0o600)).To(Succeed())
		code, out, errOut := orch([]string{"NATS_URL=nats://127.0.0.1:1"}, "apply", path)
		Expect(code).To(Equal(1))
		Expect(out).To(BeEmpty())
		Expect(errOut).To(Equal("ccm-orch: manifest " + path + ": invalid YAML at line 7, column 10: value is not allowed in this context\n"))
	})
})
