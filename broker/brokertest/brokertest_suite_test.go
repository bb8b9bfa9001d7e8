package brokertest_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestBrokertest(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Brokertest Suite")
}
