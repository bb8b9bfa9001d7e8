package main

import (
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"gopkg.in/yaml.v3"
)

var _ = Describe("jsonToYAML", func() {
	// decoded reads a document with encoding/json's rules, numbers kept
	// as written.
	fromJSON := func(doc string) any {
		var v any
		Expect(json.Unmarshal([]byte(doc), &v)).To(Succeed())
		return v
	}
	// fromYAML reads YAML back into the shapes encoding/json gives.
	fromYAML := func(doc []byte) any {
		var v any
		Expect(yaml.Unmarshal(doc, &v)).To(Succeed(), string(doc))
		b, err := json.Marshal(v)
		Expect(err).NotTo(HaveOccurred())
		return fromJSON(string(b))
	}

	It("writes the same document, strings YAML would misread kept strings", func() {
		doc := `{"mode":"0644","yes":"yes","on":"on","float":"1.0","exp":"1e3","empty":"","null":"null","tilde":"~",` +
			`"hex":"0x10","multi":"multi\nline\n","dash":"- x","colon":"a: b","hash":"#c","lead":" lead","tab":"\ttab",` +
			`"time":"2026-11-29T06:47:55Z","at":"@x","true":"true","n":12,"f":1.5,"b":false,"z":null,` +
			`"list":[1,"2",{"k":[]}],"obj":{}}`
		y, err := jsonToYAML([]byte(doc))
		Expect(err).NotTo(HaveOccurred())
		Expect(fromYAML(y)).To(Equal(fromJSON(doc)))
	})

	It("keeps the members in the document's order", func() {
		y, err := jsonToYAML([]byte(`{"zeta":1,"alpha":{"b":2,"a":3},"mid":[{"y":1,"x":2}]}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(y)).To(Equal("zeta: 1\nalpha:\n  b: 2\n  a: 3\nmid:\n  - y: 1\n    x: 2\n"))
	})

	It("refuses what is not one JSON document", func() {
		_, err := jsonToYAML([]byte(`{"a":1} {"b":2}`))
		Expect(err).To(MatchError(ContainSubstring("more than one JSON document")))
		_, err = jsonToYAML([]byte(`{"a":`))
		Expect(err).To(HaveOccurred())
	})
})
