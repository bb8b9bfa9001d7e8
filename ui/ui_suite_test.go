package ui_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestUI(t *testing.T) {
	RegisterFailHandler(Fail)
	// The pages fill in live as records arrive: allow for a busy machine.
	SetDefaultEventuallyTimeout(10 * time.Second)
	RunSpecs(t, "UI Suite")
}
