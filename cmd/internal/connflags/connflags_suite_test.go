package connflags_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestConnflags(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "connflags Suite")
}
