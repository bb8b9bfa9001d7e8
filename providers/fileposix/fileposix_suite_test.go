package fileposix_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestFileposix(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "File Posix Provider Suite")
}
