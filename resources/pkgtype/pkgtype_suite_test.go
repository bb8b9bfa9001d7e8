package pkgtype_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestPkgtype(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Package Type Suite")
}
