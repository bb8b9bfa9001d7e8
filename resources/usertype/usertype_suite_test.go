package usertype_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestUsertype(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "User Type Suite")
}
