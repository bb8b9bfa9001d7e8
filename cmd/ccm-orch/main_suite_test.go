package main

import (
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestCCMOrch(t *testing.T) {
	RegisterFailHandler(Fail)
	// These suites wait for agents, brokers and processes; on a loaded
	// machine (CI on 2 cores under -race) that can take longer than
	// Gomega's default 1 s. Eventually still returns at the first success.
	SetDefaultEventuallyTimeout(10 * time.Second)
	RunSpecs(t, "ccm-orch Suite")
}

// suiteKey is a signing key every command of the suite uses (CCM_KEY), so
// requests are signed as in production; the test fleets accept any valid
// signature (insecure) unless a spec gives them a policy.
var suiteKey string

var _ = BeforeSuite(func() {
	dir, err := os.MkdirTemp("", "ccm-orch-suite-")
	Expect(err).ToNot(HaveOccurred())
	DeferCleanup(os.RemoveAll, dir)
	suiteKey, _, _, err = newKeyFiles(dir, "suite")
	Expect(err).ToNot(HaveOccurred())
	Expect(os.Setenv("CCM_KEY", suiteKey)).To(Succeed())
	DeferCleanup(os.Unsetenv, "CCM_KEY")
})
