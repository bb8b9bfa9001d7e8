package resflags_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestResflags(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Resflags Suite")
}
