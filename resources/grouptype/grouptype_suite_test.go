package grouptype_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestGrouptype(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Group Type Suite")
}
