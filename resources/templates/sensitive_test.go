package templates_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/resources/templates"
)

var _ = Describe("Env.Sensitive", func() {
	data := map[string]any{
		"db":     map[string]any{"password": "s3cr3t-pw", "host": "db1"},
		"token":  "tok-123456",
		"motd":   "hello",
		"short":  "ab",
		"tokens": []any{"list-secret-1"},
	}
	env := templates.New(map[string]any{"os": "debian"}, data, templates.WithSensitive([]string{"db.password", "data.token", "short", "tokens"}))
	expand := func(raw map[string]any) any {
		out, err := env.ExpandValue(raw)
		Expect(err).NotTo(HaveOccurred())
		return out
	}
	DescribeTable("decides whether a resource reads sensitive data",
		func(raw map[string]any, want bool) {
			Expect(env.Sensitive(raw, expand(raw))).To(Equal(want))
		},
		Entry("a lookup of a sensitive key", map[string]any{"content": "{{ lookup('data.token') }}"}, true),
		Entry("member access to a sensitive key", map[string]any{"content": "pw={{ data.db.password }}"}, true),
		Entry("index access to a sensitive key", map[string]any{"content": "{{ data['token'] }}"}, true),
		Entry("a transformed secret", map[string]any{"content": "{{ upper(data.token) }}"}, true),
		Entry("data as a whole", map[string]any{"content": "{{ toJSON(data) }}"}, true),
		Entry("a sibling of a sensitive key (errs on hiding)", map[string]any{"content": "{{ data.db.host }}"}, true),
		Entry("nested in a list", map[string]any{"env": []any{"X={{ data.token }}"}}, true),
		Entry("a secret value typed in literally", map[string]any{"content": "pw=s3cr3t-pw"}, true),
		Entry("a value in a sensitive list", map[string]any{"content": "list-secret-1"}, true),
		Entry("other data", map[string]any{"content": "{{ data.motd }} on {{ facts.os }}"}, false),
		Entry("a short sensitive value is not searched for", map[string]any{"content": "ab"}, false),
		Entry("no templates", map[string]any{"content": "plain"}, false),
	)

	It("is never sensitive without sensitive keys", func() {
		plain := templates.New(nil, data)
		raw := map[string]any{"content": "{{ data.token }}"}
		out, err := plain.ExpandValue(raw)
		Expect(err).NotTo(HaveOccurred())
		Expect(plain.Sensitive(raw, out)).To(BeFalse())
	})
})
