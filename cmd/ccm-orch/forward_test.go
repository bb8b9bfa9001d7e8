package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"
)

// execCall is what a forwarded command asked execve for.
type execCall struct {
	path       string
	argv, env  []string
	called     bool
	failWith   error
	selfPath   string
	selfFailed bool
}

// runAs runs args in-process as the ccm-orch at c.selfPath, recording
// the exec instead of doing it.
func runAs(c *execCall, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	a := &app{ctx: context.Background()}
	a.Stdout, a.Stderr = &out, &errb
	a.execve = func(path string, argv, env []string) error {
		c.path, c.argv, c.env, c.called = path, argv, env, true
		return c.failWith
	}
	a.self = func() (string, error) {
		if c.selfFailed {
			return "", errors.New("no /proc")
		}
		return c.selfPath, nil
	}
	code := a.run(args)
	return code, out.String(), errb.String()
}

// writeExecutable makes an empty executable file.
func writeExecutable(path string) {
	Expect(os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755)).To(Succeed())
}

var _ = Describe("forwarded commands", func() {
	var (
		dir   string
		empty string
		c     *execCall
	)
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		empty = GinkgoT().TempDir()
		GinkgoT().Setenv("PATH", empty)
		c = &execCall{selfPath: filepath.Join(dir, "ccm-orch")}
		writeExecutable(c.selfPath)
	})

	DescribeTable("run the binary beside ccm-orch with the arguments unchanged after its run command",
		func(args []string, bin string, argv []string) {
			writeExecutable(filepath.Join(dir, bin))
			code, _, errOut := runAs(c, args...)
			Expect(code).To(Equal(1)) // the recorded exec returned
			Expect(c.called).To(BeTrue(), errOut)
			Expect(c.path).To(Equal(filepath.Join(dir, bin)))
			Expect(c.argv).To(Equal(argv))
			Expect(c.env).To(Equal(os.Environ()))
		},
		Entry("broker flags", []string{"broker", "--listen", "0.0.0.0:4222", "--store", "/var/lib/ccm-broker"}, "ccm-broker",
			[]string{"ccm-broker", "run", "--listen", "0.0.0.0:4222", "--store", "/var/lib/ccm-broker"}),
		Entry("broker help", []string{"broker", "--help"}, "ccm-broker", []string{"ccm-broker", "run", "--help"}),
		Entry("global flags first", []string{"--debug", "--log-format", "json", "-v", "--log-level=warn", "broker", "--name", "b1"}, "ccm-broker",
			[]string{"ccm-broker", "--debug", "--log-format", "json", "-v", "--log-level=warn", "run", "--name", "b1"}),
		Entry("bench", []string{"bench", "--agents", "1000", "--rows", "noop,floor"}, "ccm-bench",
			[]string{"ccm-bench", "run", "--agents", "1000", "--rows", "noop,floor"}),
		Entry("bench alone", []string{"bench"}, "ccm-bench", []string{"ccm-bench", "run"}),
	)

	It("finds the binary beside the real ccm-orch when it runs through a symbolic link", func() {
		writeExecutable(filepath.Join(dir, "ccm-broker"))
		link := filepath.Join(GinkgoT().TempDir(), "ccm-orch")
		Expect(os.Symlink(c.selfPath, link)).To(Succeed())
		c.selfPath = link
		runAs(c, "broker")
		Expect(c.path).To(Equal(filepath.Join(dir, "ccm-broker")))
	})

	It("forwards only a command, not a word of another command's arguments", func() {
		writeExecutable(filepath.Join(dir, "ccm-broker"))
		code, _, _ := runAs(c, "history", "host", "broker", "--server", "nats://127.0.0.1:1")
		Expect(code).To(Equal(1))
		Expect(c.called).To(BeFalse())
		// the value of --log-level is not a command
		_, _, _, ok := splitForwarded([]string{"--log-level", "broker"})
		Expect(ok).To(BeFalse())
	})

	It("falls back to PATH", func() {
		writeExecutable(filepath.Join(empty, "ccm-bench"))
		runAs(c, "bench", "--agents", "5")
		Expect(c.path).To(Equal(filepath.Join(empty, "ccm-bench")))
		Expect(c.argv).To(Equal([]string{"ccm-bench", "run", "--agents", "5"}))
	})

	It("does not take a directory or a file that is not executable for the binary", func() {
		Expect(os.Mkdir(filepath.Join(dir, "ccm-broker"), 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(empty, "ccm-broker"), nil, 0o644)).To(Succeed())
		code, _, errOut := runAs(c, "broker")
		Expect(code).To(Equal(1))
		Expect(c.called).To(BeFalse())
		Expect(lines(errOut)).To(HaveLen(1))
	})

	DescribeTable("exit 1 with one line naming the missing binary and where it looked",
		func(args []string, want string) {
			code, out, errOut := runAs(c, args...)
			Expect(code).To(Equal(1))
			Expect(c.called).To(BeFalse())
			Expect(out).To(BeEmpty())
			Expect(lines(errOut)).To(HaveLen(1))
			Expect(errOut).To(Equal("ccm-orch: " + strings.ReplaceAll(want, "DIR", dir) + "\n"))
		},
		Entry("broker", []string{"broker", "--listen", "x"},
			"ccm-broker not found in DIR (beside ccm-orch) nor on PATH: it ships in the ccm-fleet package beside ccm-orch; in a source tree, make build puts it in bin/"),
		Entry("bench", []string{"bench"},
			"ccm-bench not found in DIR (beside ccm-orch) nor on PATH: it is not packaged: build it with make build (bin/ccm-bench, beside bin/ccm-orch and bin/ccm-agent)"),
	)

	It("says where it looked when the running ccm-orch cannot be found", func() {
		c.selfFailed = true
		code, _, errOut := runAs(c, "broker")
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("ccm-broker not found in (the running ccm-orch's directory, unknown) (beside ccm-orch) nor on PATH"))
	})

	It("names the binary when it cannot be run", func() {
		writeExecutable(filepath.Join(dir, "ccm-broker"))
		c.failWith = syscall.ENOEXEC
		code, _, errOut := runAs(c, "broker")
		Expect(code).To(Equal(1))
		Expect(errOut).To(Equal("ccm-orch: run " + filepath.Join(dir, "ccm-broker") + ": exec format error\n"))
	})

	It("lists them in ccm-orch's help, saying what they run", func() {
		code, out, _ := runAs(c, "--help")
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("runs ccm-broker"))
		Expect(out).To(ContainSubstring("runs ccm-bench"))
		Expect(c.called).To(BeFalse())
		code, out, _ = runAs(c, "help", "broker")
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("ccm-orch broker --help shows its flags"))
		Expect(c.called).To(BeFalse())
	})
})

var _ = Describe("ccm-orch broker, built", Ordered, func() {
	var orchBin, dir string
	BeforeAll(func() {
		goBin, err := exec.LookPath("go")
		Expect(err).ToNot(HaveOccurred())
		dir = GinkgoT().TempDir()
		for _, c := range []string{"ccm-orch", "ccm-broker"} {
			out, err := exec.Command(goBin, "build", "-o", filepath.Join(dir, c), "github.com/ccm-fleet/ccm/cmd/"+c).CombinedOutput()
			Expect(err).ToNot(HaveOccurred(), string(out))
		}
		orchBin = filepath.Join(dir, "ccm-orch")
	})

	It("runs ccm-broker: it serves, and stops on SIGTERM", func() {
		s, err := gexec.Start(exec.Command(orchBin, "broker", "--listen", "127.0.0.1:-1", "--store", filepath.Join(dir, "store")), GinkgoWriter, GinkgoWriter)
		Expect(err).ToNot(HaveOccurred())
		Eventually(s.Out).WithTimeout(fleetTimeout).Should(gbytes.Say(`broker listening on nats://127\.0\.0\.1:\d+`))
		Eventually(s.Err).WithTimeout(fleetTimeout).Should(gbytes.Say(`history stream CCM_HISTORY, node registry CCM_NODES and assignments CCM_ASSIGNMENTS ready`))
		s.Terminate()
		Eventually(s).WithTimeout(fleetTimeout).Should(gexec.Exit(0))
	})

	It("passes --log-format json on: every line the broker writes is a JSON object", func() {
		s, err := gexec.Start(exec.Command(orchBin, "--log-format", "json", "-v", "broker", "--listen", "127.0.0.1:-1", "--store", filepath.Join(dir, "store-json")), GinkgoWriter, GinkgoWriter)
		Expect(err).ToNot(HaveOccurred())
		Eventually(s.Err).WithTimeout(fleetTimeout).Should(gbytes.Say(`"msg":"history ready"`))
		s.Terminate()
		Eventually(s).WithTimeout(fleetTimeout).Should(gexec.Exit(0))
		for _, stream := range [][]byte{s.Out.Contents(), s.Err.Contents()} {
			for _, l := range lines(string(stream)) {
				var rec map[string]any
				Expect(json.Unmarshal([]byte(l), &rec)).To(Succeed(), "a line that is not a JSON object: %q", l)
				Expect(rec).To(HaveKey("msg"))
			}
		}
		Expect(string(s.Out.Contents())).To(ContainSubstring(`"msg":"broker listening"`))
	})

	It("shows ccm-broker's flags for --help", func() {
		out, err := exec.Command(orchBin, "broker", "--help").CombinedOutput()
		Expect(err).ToNot(HaveOccurred(), string(out))
		Expect(string(out)).To(ContainSubstring("usage: ccm-broker run"))
		Expect(string(out)).To(ContainSubstring("--cluster-listen"))
		Expect(string(out)).To(ContainSubstring("ccm-broker --listen 0.0.0.0:4222 --store /var/lib/ccm-broker"))
	})

	It("passes ccm-broker's errors and exit status through", func() {
		out, err := exec.Command(orchBin, "broker", "--listen", "nowhere").CombinedOutput()
		var ee *exec.ExitError
		Expect(errors.As(err, &ee)).To(BeTrue(), string(out))
		Expect(ee.ExitCode()).To(Equal(1))
		Expect(lines(string(out))).To(HaveLen(1))
		Expect(string(out)).To(HavePrefix("ccm-broker: "))
	})
})
