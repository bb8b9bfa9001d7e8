package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/sys/unix"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/orchestrator/fleettest"
)

// terminal is a pseudo-terminal of a fixed size: a command started with
// its tty as stdout and stderr sees a terminal of that many columns, and
// everything it prints is collected from the master side.
type terminal struct {
	master, tty *os.File
	done        chan struct{}

	// guards out
	mu  sync.Mutex
	out bytes.Buffer
}

// openTerminal opens a pseudo-terminal of cols columns and starts
// collecting what is written to it; it is closed at the spec's cleanup.
func openTerminal(cols uint16) *terminal {
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	Expect(err).NotTo(HaveOccurred())
	Expect(unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0)).To(Succeed())
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	Expect(err).NotTo(HaveOccurred())
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	Expect(err).NotTo(HaveOccurred())
	Expect(unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: cols})).To(Succeed())
	t := &terminal{master: master, tty: tty, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			t.mu.Lock()
			t.out.Write(buf[:n])
			t.mu.Unlock()
			if err != nil {
				return // EIO once no process holds the tty any more
			}
		}
	}()
	DeferCleanup(func() {
		_ = tty.Close()
		_ = master.Close()
		<-t.done
	})
	return t
}

// start runs cmd with the terminal as its stdin, stdout and stderr.
func (t *terminal) start(cmd *exec.Cmd) {
	cmd.Stdin, cmd.Stdout, cmd.Stderr = t.tty, t.tty, t.tty
	Expect(cmd.Start()).To(Succeed())
}

// text is what the terminal received so far, line ends as "\n".
func (t *terminal) text() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.ReplaceAll(t.out.String(), "\r\n", "\n")
}

// words joins the whitespace-separated words of s with one space: text
// wrapped at spaces has the same words as the text it wraps.
func words(s string) string { return strings.Join(strings.Fields(s), " ") }

// buildOrch builds the ccm-orch binary into dir and returns its path.
func buildOrch(dir string) string {
	goBin, err := exec.LookPath("go")
	Expect(err).NotTo(HaveOccurred())
	bin := filepath.Join(dir, "ccm-orch")
	out, err := exec.Command(goBin, "build", "-o", bin, "github.com/ccm-fleet/ccm/cmd/ccm-orch").CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
	return bin
}

// requestIDPattern finds the request id in a text report's summary line,
// wrapped or not.
var requestIDPattern = regexp.MustCompile(`\(request\s+([a-z0-9]{20}),`)

var _ = Describe("ccm-orch on an 80-column terminal", Ordered, func() {
	var (
		bin string
		fl  *fleettest.Fleet
	)
	BeforeAll(func() {
		bin = buildOrch(GinkgoT().TempDir())
		fl = fleettest.StartWith(GinkgoT(), fleettest.Options{History: true, Config: agent.Config{HistoryRetry: 100 * time.Millisecond}},
			4, nil, "os=debian,rhel")
	})

	It("keeps the request id, every failure reason and every host whole, with or without -v", func() {
		// Each host fails with its own long reason: the path it could not
		// write, under a directory that does not exist, names the host.
		missing := filepath.Join(GinkgoT().TempDir(), "a-directory-that-does-not-exist", strings.Repeat("deeper-", 6))
		name := missing + "/{{ lookup('facts.identity') }}/motd"
		for _, verbose := range []bool{false, true} {
			args := []string{"ensure", "file", name, "present", "--content", "hi", "--owner", "root", "--group", "root", "--mode", "0644", "--server", fl.URL(), "--no-progress"}
			if verbose {
				args = append([]string{"-v"}, args...)
			}
			term := openTerminal(80)
			cmd := exec.Command(bin, args...)
			term.start(cmd)
			err := cmd.Wait()
			var ee *exec.ExitError
			Expect(err).To(BeAssignableToTypeOf(ee), term.text())
			Expect(err.(*exec.ExitError).ExitCode()).To(Equal(2), term.text())
			_ = term.tty.Close()
			Eventually(term.done).WithTimeout(fleetTimeout).Should(BeClosed())
			out := term.text()

			Expect(out).NotTo(ContainSubstring("…"), "nothing is cut")
			m := requestIDPattern.FindStringSubmatch(out)
			Expect(m).NotTo(BeNil(), out)
			id := m[1]

			// The id printed is the run's: history knows it, and its
			// reasons are the ones the terminal shows whole.
			code, js, errOut := orch("history", "show", id, "--json", "--server", fl.URL())
			Expect(code).To(Equal(2), errOut)
			var doc struct {
				Groups []struct {
					Message string   `json:"message"`
					Hosts   []string `json:"hosts"`
				} `json:"groups"`
			}
			Expect(json.Unmarshal([]byte(js), &doc)).To(Succeed())
			Expect(doc.Groups).NotTo(BeEmpty())
			for _, g := range doc.Groups {
				Expect(len(g.Message)).To(BeNumerically(">", 80), "a reason longer than the terminal")
				Expect(words(out)).To(ContainSubstring(words(g.Message)), "the reason is whole")
				for _, h := range g.Hosts {
					Expect(strings.Fields(strings.ReplaceAll(out, ",", " "))).To(ContainElement(h), "the host is listed whole")
				}
			}
			for _, l := range strings.Split(out, "\n") {
				if len(strings.Fields(l)) > 1 && !strings.HasPrefix(l, "time=") { // -v's log lines are not the report
					Expect(len([]rune(l))).To(BeNumerically("<=", 80), "a line of several words fits: %q", l)
				}
			}
		}
	})
})
