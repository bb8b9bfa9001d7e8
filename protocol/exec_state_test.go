package protocol_test

import (
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("ExecState from older agents", func() {
	It("reads exit_code and creates_satisfied under metadata, never writes them", func() {
		old := []byte(`{"timestamp":"2026-01-01T00:00:00Z","protocol":"io.choria.ccm.v1.resource.exec.state","type":"exec","name":"/bin/true",` +
			`"ensure":"present","changed":true,"refreshed":false,"stable":false,"noop":false,` +
			`"metadata":{"name":"/bin/true","provider":"posix","exit_code":0,"creates_satisfied":false}}`)
		st, err := protocol.DecodeState(protocol.TypeExec, old)
		Expect(err).NotTo(HaveOccurred())
		es := st.(*protocol.ExecState)
		Expect(es.Metadata.LegacyExitCode).To(HaveValue(Equal(0)))

		code := 3
		b, err := json.Marshal(&protocol.ExecState{ExitCode: &code, CreatesSatisfied: true, Metadata: &protocol.ExecMetadata{Name: "x", Provider: "posix"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(string(b)).To(ContainSubstring(`"exitcode":3,"creates_satisfied":true,"metadata":{"name":"x","provider":"posix"}}`))
	})
})
