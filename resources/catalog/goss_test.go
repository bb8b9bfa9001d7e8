package catalog_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/catalog"
)

var _ = Describe("Goss rules", func() {
	// withGoss is a file resource whose second health check holds rules.
	withGoss := func(rules map[string]any) resources.Properties {
		return decode("file", map[string]any{"name": "/etc/motd", "content": "hi", "owner": "root", "group": "root", "mode": "0644", "health_checks": []any{
			map[string]any{"command": "/bin/true"},
			map[string]any{"goss_rules": rules},
		}})
	}
	const c = "health_checks[1].goss_rules."

	It("declares every object the rules touch, after the resource's own and its commands", func() {
		got, err := catalog.Objects("file", withGoss(map[string]any{
			"file":    map[string]any{"/etc/shadow": map[string]any{"exists": true}, "ignored-key": map[string]any{"path": "/etc/../etc/hosts"}},
			"command": map[string]any{"check-it": map[string]any{"exec": "touch /tmp/x", "exit-status": 0}, "/bin/true": nil},
			"http":    map[string]any{"https://user:pw@repo.example/health": map[string]any{"status": 200, "no-follow-redirects": true, "ca-file": "/etc/ssl/ca.pem"}},
			"package": map[string]any{"nginx": map[string]any{"installed": true}},
			"service": map[string]any{"web": map[string]any{"name": "nginx", "running": true}},
			"port":    map[string]any{"tcp6:443": map[string]any{"listening": true}},
			"addr":    map[string]any{"tcp://10.0.0.1:22": map[string]any{"reachable": true}},
		}), "")
		Expect(err).ToNot(HaveOccurred())
		Expect(simplify(got)).To(Equal([]obj{
			{kind: catalog.PathWrite, check: "name", value: "/etc/motd"},
			{kind: catalog.PathRead, check: "name", value: "/etc/motd"},
			{kind: catalog.Command, check: "health_checks[0]", value: "/bin/true", runner: catalog.RunDirect},
			{kind: catalog.Address, check: c + "addr", value: "tcp://10.0.0.1:22"},
			{kind: catalog.Command, check: c + "command", value: "/bin/true", runner: catalog.RunShell},
			{kind: catalog.Command, check: c + "command", value: "touch /tmp/x", runner: catalog.RunShell},
			{kind: catalog.PathRead, check: c + "file", value: "/etc/shadow"},
			{kind: catalog.PathRead, check: c + "file", value: "/etc/hosts"},
			{kind: catalog.URL, check: c + "http", value: "https://[redacted]@repo.example/health"},
			{kind: catalog.PathRead, check: c + "http ca-file", value: "/etc/ssl/ca.pem"},
			{kind: catalog.Package, check: c + "package", value: "nginx"},
			{kind: catalog.PathRead, check: c + "port", value: "/proc/net/tcp"},
			{kind: catalog.PathRead, check: c + "port", value: "/proc/net/tcp6"},
			{kind: catalog.PathRead, check: c + "port", value: "/proc/net/udp"},
			{kind: catalog.PathRead, check: c + "port", value: "/proc/net/udp6"},
			{kind: catalog.Service, check: c + "service", value: "nginx"},
		}))
	})

	DescribeTable("refuses, naming the key, rules it cannot declare or will not take as written",
		func(rules map[string]any, sentinel error, msg string) {
			_, err := catalog.Objects("file", withGoss(rules), "")
			Expect(err).To(MatchError(resources.ErrForbidden))
			Expect(err).To(MatchError(sentinel))
			Expect(err).To(MatchError("file: forbidden: property " + c[:len(c)-1] + msg))
		},
		Entry("gossfile includes", map[string]any{"gossfile": map[string]any{"/etc/goss.d/*.yaml": map[string]any{}}}, catalog.ErrUndeclarable,
			`: key "gossfile": the resource catalog cannot declare what it touches, so no scope could judge it`),
		Entry("kernel-param", map[string]any{"kernel-param": map[string]any{"kernel.pid_max": map[string]any{"value": "1"}}}, catalog.ErrUndeclarable,
			`: key "kernel-param": the resource catalog cannot declare what it touches, so no scope could judge it`),
		Entry("matching", map[string]any{"matching": map[string]any{"x": map[string]any{"content": 1, "matches": 1}}}, catalog.ErrUndeclarable,
			`: key "matching": the resource catalog cannot declare what it touches, so no scope could judge it`),
		Entry("a key in another case, which goss would read as file", map[string]any{"FILE": map[string]any{"/etc/shadow": map[string]any{"exists": true}}}, catalog.ErrUndeclarable,
			`: key "FILE": the resource catalog cannot declare what it touches, so no scope could judge it`),
		Entry("an attribute goss would fold to another (long s)", map[string]any{"addr": map[string]any{"tcp://10.0.0.1:22": map[string]any{"addre\u017f\u017f": "tcp://169.254.169.254:80"}}}, catalog.ErrGossRule,
			`.addr "tcp://10.0.0.1:22": goss rule refused: attribute "addreſſ": goss attributes are written in lower-case letters, digits and '-'`),
		Entry("an http rule through a proxy", map[string]any{"http": map[string]any{"https://repo.example/": map[string]any{"proxy": "http://proxy:3128", "no-follow-redirects": true}}}, catalog.ErrUndeclarable,
			`.http "https://repo.example/": attribute "proxy": the resource catalog cannot declare what it touches, so no scope could judge it`),
		Entry("an http rule following redirects", map[string]any{"http": map[string]any{"https://repo.example/": map[string]any{"status": 200}}}, catalog.ErrGossRule,
			`.http "https://repo.example/": goss rule refused: https://repo.example/ would follow redirects, whose hops no scope judges: set no-follow-redirects: true`),
		Entry("a relative file", map[string]any{"file": map[string]any{"etc/shadow": map[string]any{"exists": true}}}, catalog.ErrGossRule,
			`.file "etc/shadow": goss rule refused: path "etc/shadow" is not an absolute path`),
		Entry("a path that is not a string", map[string]any{"file": map[string]any{"/etc/motd": map[string]any{"path": []any{"/etc/shadow"}}}}, catalog.ErrGossRule,
			`.file "/etc/motd": goss rule refused: attribute "path" is not a string`),
		Entry("an addr rule that is not tcp or udp", map[string]any{"addr": map[string]any{"http://10.0.0.1:22": map[string]any{"reachable": true}}}, catalog.ErrGossRule,
			`.addr "http://10.0.0.1:22": goss rule refused: address "http://10.0.0.1:22": use tcp://HOST:PORT or udp://HOST:PORT`),
	)
})
