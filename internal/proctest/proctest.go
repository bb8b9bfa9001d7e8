// Package proctest follows the processes test commands start, by the pid
// files they write, so that tests of process containment can say whether
// a process still runs and never leave one behind. Only tests import it.
package proctest

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
)

// PidIn waits (bounded) for a pid file written by a test command and
// returns the pid.
func PidIn(file string) int {
	ginkgo.GinkgoHelper()
	var pid int
	gomega.Eventually(func() error {
		b, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err
	}).WithTimeout(20 * time.Second).WithPolling(20 * time.Millisecond).Should(gomega.Succeed())
	return pid
}

// Running reports whether pid is a live process (not a zombie).
func Running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z'
}

// KillAfter kills, when the spec ends, the sleep or sh processes named in
// the pid files, so a failing spec leaves nothing running.
func KillAfter(files ...string) {
	ginkgo.DeferCleanup(func() {
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil || pid <= 1 {
				continue
			}
			cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
			if strings.Contains(string(cmd), "sleep") || strings.HasPrefix(string(cmd), "/bin/sh") {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
}

// CompleteLines returns the lines of data, a file another process is
// appending to, that end with a newline: a last line still being written
// is left out (it is read whole the next time).
func CompleteLines(data []byte) []string {
	s := string(data)
	end := strings.LastIndexByte(s, '\n')
	if end < 0 {
		return nil
	}
	return strings.Split(s[:end], "\n")
}
