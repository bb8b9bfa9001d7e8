package agent_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestAgent(t *testing.T) {
	RegisterFailHandler(Fail)
	// These suites wait for agents, brokers and processes; on a loaded
	// machine (CI on 2 cores under -race) that can take longer than
	// Gomega's default 1 s. Eventually still returns at the first success.
	SetDefaultEventuallyTimeout(10 * time.Second)
	RunSpecs(t, "Agent Suite")
}
