package applytype_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestApplyType(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "applytype Suite")
}
