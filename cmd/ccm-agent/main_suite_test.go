package main

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestCCMAgent(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "ccm-agent Suite")
}
