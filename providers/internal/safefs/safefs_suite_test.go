package safefs

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestSafefs(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "safefs")
}
