package dnf_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestDnf(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "DNF Provider Suite")
}
