package archivetype_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestArchivetype(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Archive type suite")
}
