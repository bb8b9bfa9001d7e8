package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/internal/schemacheck"
	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("ensure api pipe's documents and the published schemas, offline", func() {
	It("validate with the stock Python validator, and a wrong document is refused", func() {
		dir := GinkgoT().TempDir()
		request := func(typ string, props map[string]any) []byte {
			b, err := json.Marshal(map[string]any{"protocol": protocol.EnsureRequestProtocol, "type": typ, "properties": props})
			Expect(err).NotTo(HaveOccurred())
			return b
		}
		motd := map[string]any{"name": filepath.Join(dir, "motd"), "ensure": "present", "content": "hi\n", "owner": "root", "group": "root", "mode": "0644"}
		requests := [][]byte{
			request("file", motd),
			request("exec", map[string]any{"name": "/bin/true"}),
			request("exec", map[string]any{"name": "/bin/false"}),
		}
		var responses [][]byte
		for _, args := range [][]string{{"--noop"}, {}, {}} {
			for _, r := range requests {
				var out, errb bytes.Buffer
				code := runWithStdin(append([]string{"ensure", "api", "pipe"}, args...), bytes.NewReader(r), &out, &errb)
				Expect(code).To(Equal(0), errb.String())
				responses = append(responses, bytes.TrimSpace(out.Bytes()))
			}
		}
		var out, errb bytes.Buffer
		Expect(runWithStdin([]string{"ensure", "api", "pipe"}, strings.NewReader(`{"protocol":"nonsense"}`), &out, &errb)).To(Equal(0))
		Expect(out.String()).To(ContainSubstring(`"error"`), "a refused request still gets a response")
		responses = append(responses, bytes.TrimSpace(out.Bytes()))

		pythons := schemacheck.Pythons()
		Expect(pythons).NotTo(BeEmpty(), "no python3 with jsonschema: install python3-jsonschema (make deps)")
		for _, py := range pythons {
			for schema, docs := range map[string][][]byte{"ensure_request.schema.json": requests, "ensure_response.schema.json": responses} {
				path := filepath.Join("..", "..", "schemas", schema)
				code, msg, err := schemacheck.Validate(py, GinkgoT().TempDir(), path, docs...)
				Expect(err).NotTo(HaveOccurred())
				Expect(code).To(Equal(0), "%s -m jsonschema %s on real documents:\n%s", py, schema, msg)
				spoiled, err := schemacheck.Spoil(docs[0])
				Expect(err).NotTo(HaveOccurred())
				code, msg, err = schemacheck.Validate(py, GinkgoT().TempDir(), path, spoiled)
				Expect(err).NotTo(HaveOccurred())
				Expect(code).NotTo(Equal(0), "%s -m jsonschema %s accepted an invalid document", py, schema)
				Expect(msg).To(ContainSubstring(schemacheck.Canary), msg)
				Expect(msg).NotTo(ContainSubstring("Traceback"), msg)
			}
		}
	})
})
