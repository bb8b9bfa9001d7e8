package natsconn_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestNatsconn(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Natsconn Suite")
}
