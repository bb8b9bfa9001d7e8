package execposix_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestExecPosix(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Exec Posix and Shell Providers Suite")
}
