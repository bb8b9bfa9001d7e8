package main

import (
	"os"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestCCMOrch(t *testing.T) {
	RegisterFailHandler(Fail)
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
