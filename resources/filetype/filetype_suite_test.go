package filetype_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestFiletype(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "File Type Suite")
}
