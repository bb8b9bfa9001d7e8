package apt_test

import (
	"os"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// TestMain runs the suite, or, started with holdLockEnv set, is the
// process that holds a lock for the specs (holdLock).
func TestMain(m *testing.M) {
	if path := os.Getenv(holdLockEnv); path != "" {
		os.Exit(holdLock(path))
	}
	os.Exit(m.Run())
}

func TestApt(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "APT Provider Suite")
}
