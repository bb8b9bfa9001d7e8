package continuous_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestContinuous(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Continuous Agent Suite")
}
