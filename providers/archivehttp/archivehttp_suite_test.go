package archivehttp_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestArchivehttp(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Archive http provider suite")
}
