package apt_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestApt(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "APT Provider Suite")
}
