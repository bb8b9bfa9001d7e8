package urlscope_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestURLScope(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "URL scope suite")
}
