package fileposix_test

import (
	"errors"
	"os/user"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/fileposix"
	"github.com/ccm-fleet/ccm/resources/redact"
)

var _ = Describe("AccountError", func() {
	It("names the account, and renders without it when the property's value is secret", func() {
		_, lookupErr := user.Lookup("canary-no-such-user-41")
		Expect(lookupErr).To(HaveOccurred())
		err := &fileposix.AccountError{Property: "owner", Name: "canary-no-such-user-41", Err: lookupErr}
		Expect(err.Error()).To(Equal(`could not lookup user "canary-no-such-user-41": unknown user canary-no-such-user-41`))
		var unknown user.UnknownUserError
		Expect(errors.As(err, &unknown)).To(BeTrue())

		secret := redact.Sensitively("file#/srv/db.conf")
		secret.AddProperty("owner")
		Expect(redact.Message(err, secret)).To(Equal(`could not lookup user "[redacted]": unknown user [redacted]`))

		// A sensitive resource's owner written as it is stays visible.
		Expect(redact.Message(err, redact.Sensitively("file#/srv/db.conf"))).To(ContainSubstring("canary-no-such-user-41"))
	})
})
