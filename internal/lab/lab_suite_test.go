package lab_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ccm-fleet/ccm/internal/lab"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// childEnv makes the test binary a lab owner that the specs kill: it boots
// the hosts named in the variable, prints each one's systemd pid and waits.
const childEnv = "CCM_LAB_TEST_CHILD"

// holdLockEnv makes the test binary a process holding an fcntl write lock
// on the file named in the variable, as dpkg does: it says "locked" and
// holds it until its standard input closes.
const holdLockEnv = "CCM_LAB_TEST_HOLD_LOCK"

func TestMain(m *testing.M) {
	if path := os.Getenv(holdLockEnv); path != "" {
		os.Exit(holdLock(path))
	}
	if names := os.Getenv(childEnv); names != "" {
		l, err := lab.Start(context.Background(), strings.Split(names, ",")...)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Printf("dir %s\n", l.Dir())
		for _, h := range l.Hosts() {
			fmt.Printf("pid %d\n", h.PID())
		}
		time.Sleep(time.Hour)
		return
	}
	os.Exit(m.Run())
}

func TestLab(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Lab Suite")
}

func holdLock(path string) int {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK}
	if err := unix.FcntlFlock(f.Fd(), unix.F_SETLKW, &lk); err != nil {
		fmt.Fprintf(os.Stderr, "lock %s: %v\n", path, err)
		return 1
	}
	fmt.Println("locked")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}
