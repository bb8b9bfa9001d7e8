package headline_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestHeadline(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Headline Suite")
}
