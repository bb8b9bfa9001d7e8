package main

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

// CCM bd56277's "ensure api pipe --yaml" writes the response's fields in
// the order of its JSON, indented by two spaces, sequences level with their
// key, durations as Go prints them (362.338µs), timestamps unquoted, and an
// empty line at the end.
var _ = Describe("ccm-agent ensure api pipe --yaml as CCM writes it", func() {
	It("keeps CCM's field order, two-space indent and duration text", func() {
		path := filepath.Join(GinkgoT().TempDir(), "motd")
		var out, errb bytes.Buffer
		req := "protocol: " + protocol.EnsureRequestProtocol + "\ntype: file\nproperties:\n  name: " + path + "\n  ensure: present\n  content: hi\n  owner: root\n  group: root\n  mode: \"0644\"\n"
		code := runWithStdin([]string{"ensure", "api", "pipe", "--yaml"}, strings.NewReader(req), &out, &errb)
		Expect(code).To(Equal(0), errb.String())
		s := out.String()
		Expect(s).To(HavePrefix("protocol: io.choria.ccm.v1.resource.ensure.response\nstate:\n  protocol: io.choria.ccm.v1.transaction.event\n  event_id: "))
		Expect(s).To(MatchRegexp(`\n  timestamp: 20\d\d-\d\d-\d\dT[0-9:.]+Z\n  type: file\n  provider: posix\n  name: ` + regexp.QuoteMeta(path) + `\n  requested_ensure: present\n  final_ensure: present\n  duration: [0-9.]+(ns|µs|ms|s)\n  properties:\n    name: ` + regexp.QuoteMeta(path) + `\n    ensure: present\n    content: hi\n    owner: root\n    group: root\n    mode: "0644"\n  status:\n    timestamp: `))
		Expect(s).To(ContainSubstring("\n  error: []\n  changed: true\n  refreshed: false\n  failed: false\n  skipped: false\n  noop: false\n  unmet_requirements: []\n"))
		Expect(s).To(HaveSuffix("\n\n"))
		Expect(s).ToNot(ContainSubstring("e+"))

		var resp map[string]any
		Expect(yaml.Unmarshal(out.Bytes(), &resp)).To(Succeed())
		Expect(resp).To(HaveKeyWithValue("protocol", protocol.EnsureResponseProtocol))
	})
})
