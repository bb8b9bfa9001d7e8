package doclinks_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestDoclinks(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "doclinks")
}
