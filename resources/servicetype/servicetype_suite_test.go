package servicetype_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestServiceType(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Service Type Suite")
}
