package exectype_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestExecType(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Exec Type Suite")
}
