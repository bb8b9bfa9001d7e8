package natskv_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestNATSKV(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "natskv")
}
