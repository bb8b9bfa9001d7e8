package lab_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ccm-fleet/ccm/internal/lab"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// childEnv makes the test binary a lab owner that the specs kill: it boots
// the hosts named in the variable, prints each one's systemd pid and waits.
const childEnv = "CCM_LAB_TEST_CHILD"

func TestMain(m *testing.M) {
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
