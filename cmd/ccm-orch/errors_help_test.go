package main

import (
	"bytes"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("ccm-orch errors that help", func() {
	// usage runs args against a server that is never reached and returns
	// the exit code and stderr.
	usage := func(args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := run(append(args, "--server", "nats://127.0.0.1:1"), &out, &errOut)
		return code, errOut.String()
	}

	It("names a typo'd resource type, the nearest one and the valid ones", func() {
		code, errOut := usage("ensure", "servce", "nginx")
		Expect(code).To(Equal(1))
		Expect(errOut).To(Equal(`ccm-orch: error: unknown resource type "servce"; did you mean "service"? valid: archive, exec, file, group, package, scaffold, service, user (ensure also takes: request)` + "\n"))
	})

	It("lists the valid types when none is near, and finds a typo'd command after global flags", func() {
		code, errOut := usage("ensure", "zzzzzz", "nginx")
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring(`unknown resource type "zzzzzz"; valid: archive, exec, file, group, package, scaffold, service, user`))
		var out, errBuf bytes.Buffer
		Expect(run([]string{"--server", "nats://127.0.0.1:1", "ensur", "service", "nginx"}, &out, &errBuf)).To(Equal(1))
		Expect(errBuf.String()).To(ContainSubstring(`unknown command "ensur"; did you mean "ensure"?`))
	})

	It("names the flag and an example for a duration without a unit", func() {
		code, errOut := usage("ensure", "service", "nginx", "--reply-timeout", "10")
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring(`--reply-timeout: "10" is not a duration: give it a unit, e.g. 10s`))
	})

	It("refuses two conditions in one --where with the right spelling, before connecting", func() {
		code, errOut := usage("ensure", "service", "nginx", "--where", "a=b,c=d")
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring(`filter "a=b,c=d": one condition per --where: write --where a=b --where c=d`))
		Expect(errOut).NotTo(ContainSubstring("connect"))
	})
})
