package scaffoldtype_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestScaffoldType(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Scaffold Type Suite")
}
