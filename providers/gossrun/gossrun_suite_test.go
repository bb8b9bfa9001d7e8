package gossrun_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestGossrun(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Gossrun Suite")
}
