package codecheck_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestCodecheck(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Codecheck Suite")
}
