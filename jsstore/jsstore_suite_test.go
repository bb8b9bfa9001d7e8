package jsstore_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestJsstore(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "jsstore Suite")
}
