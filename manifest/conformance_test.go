package manifest_test

// The examples of CCM's documentation pages (docs/content/ of
// github.com/choria-io/ccm) as test cases, with the outputs those pages
// state. Each case names its page.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/providers/gossrun"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// ccmHieraExample is the annotated example of docs/content/hiera/_index.md,
// with the merge strategy filled in by each case.
const ccmHieraExample = `
hierarchy:
    order:
     - env:${ lookup('facts.env') }
     - role:${ lookup('facts.role') }
     - host:${ lookup('facts.hostname') }
    merge: %s

data:
   log_level: INFO
   packages:
     - ca-certificates
   web:
     listen_port: 80
     tls: false

overrides:
    env:prod:
      log_level: WARN

    role:web:
      packages:
        - nginx
      web:
        listen_port: 443
        tls: true

    host:web01:
      log_level: TRACE
`

var _ = Describe("conformance with CCM's documentation", func() {
	hiera := func(doc string) *manifest.Hiera {
		h, err := manifest.ParseHiera([]byte(doc))
		Expect(err).NotTo(HaveOccurred())
		return h
	}
	resolve := func(doc string, facts map[string]any) map[string]any {
		res, err := hiera(doc).ResolveWith(facts, nil)
		Expect(err).NotTo(HaveOccurred())
		return res.Data
	}

	Describe("docs/content/hiera/_index.md of choria-io/ccm", func() {
		prodWeb01 := map[string]any{"env": "prod", "role": "web", "hostname": "web01"}
		devWeb01 := map[string]any{"env": "dev", "role": "web", "hostname": "web01"}
		DescribeTable("the annotated example (order env, role, host)",
			func(merge string, facts map[string]any, logLevel string, packages []any, port float64, tls bool) {
				doc := fmt.Sprintf(ccmHieraExample, merge)
				want := map[string]any{
					"log_level": logLevel,
					"packages":  packages,
					"web":       map[string]any{"listen_port": port, "tls": tls},
				}
				Expect(resolve(doc, facts)).To(Equal(want))
				// The same document as a manifest resolves the same.
				m, err := manifest.Parse([]byte(doc), manifest.ParseOptions{})
				Expect(err).NotTo(HaveOccurred())
				r, err := m.Resolve(manifest.RunOptions{Facts: facts})
				Expect(err).NotTo(HaveOccurred())
				Expect(r.Data).To(Equal(want))
			},
			Entry("deep, env=prod role=web hostname=web01: later levels win, lists concatenate",
				"deep", prodWeb01, "TRACE", []any{"ca-certificates", "nginx"}, 443.0, true),
			Entry("deep, env=dev role=web hostname=web01",
				"deep", devWeb01, "TRACE", []any{"ca-certificates", "nginx"}, 443.0, true),
			Entry("deep, env=prod role=db hostname=db01: only env matches",
				"deep", map[string]any{"env": "prod", "role": "db", "hostname": "db01"}, "WARN", []any{"ca-certificates"}, 80.0, false),
			Entry("first, env=prod: only the first matching level, whose top-level keys replace the base",
				"first", prodWeb01, "WARN", []any{"ca-certificates"}, 80.0, false),
			Entry("first, env=dev: role:web is the first match; its web replaces the base's whole",
				"first", devWeb01, "INFO", []any{"nginx"}, 443.0, true),
			Entry("first, env=dev role=db hostname=web01: host:web01 is the first match",
				"first", map[string]any{"env": "dev", "role": "db", "hostname": "web01"}, "TRACE", []any{"ca-certificates"}, 80.0, false),
		)

		It("a fact a host lacks makes its level not match (env: is not an override key)", func() {
			Expect(resolve(fmt.Sprintf(ccmHieraExample, "deep"), map[string]any{"role": "web"})).To(Equal(map[string]any{
				"log_level": "INFO", "packages": []any{"ca-certificates", "nginx"},
				"web": map[string]any{"listen_port": 443.0, "tls": true},
			}))
		})

		It("the CLI example: data.json with an fqdn level", func() {
			doc := `{
    "hierarchy": {
        "order": [
            "fqdn:${ lookup('facts.fqdn') }"
        ]
    },
    "data": {
        "test": "value"
    },
    "overrides": {
        "fqdn:my.fqdn.com": {
            "test": "override"
        }
    }
}`
			Expect(resolve(doc, map[string]any{"fqdn": "my.fqdn.com"})).To(Equal(map[string]any{"test": "override"}))
			Expect(resolve(doc, map[string]any{"fqdn": "other.fqdn.com"})).To(Equal(map[string]any{"test": "value"}))
		})

		It("without a hierarchy section the order is [default]", func() {
			doc := "data: {a: base, b: base}\noverrides:\n  default: {a: from-default}\n"
			Expect(resolve(doc, nil)).To(Equal(map[string]any{"a": "from-default", "b": "base"}))
		})

		It("data annotations: @require and @validate pass on the page's example", func() {
			doc := `
data:
  # The username to run the process as
  # @require
  user: bob

  # @validate isShellSafe(value)
  command: "/usr/bin/thing"

  # @require
  # @validate isIPv4(value)
  listen_address: 10.0.0.1

  # No annotations, no validation
  port: 8080
  debug: false
`
			h := hiera(doc)
			Expect(h.Rules).To(Equal([]manifest.Rule{
				{Key: "command", Validation: "isShellSafe(value)"},
				{Key: "listen_address", Required: true, Validation: "isIPv4(value)"},
				{Key: "user", Required: true},
			}))
			Expect(resolve(doc, nil)).To(HaveKeyWithValue("user", "bob"))
		})

		DescribeTable("data annotations: what fails",
			func(doc string, msg string) {
				_, err := hiera(doc).ResolveWith(nil, nil)
				Expect(err).To(MatchError(manifest.ErrValidation))
				Expect(err).To(MatchError(resources.ErrInvalid))
				Expect(err.Error()).To(ContainSubstring(msg))
			},
			Entry("@require on an empty string", "data:\n  # @require\n  user: \"\"\n", `data.user is required but has no value`),
			Entry("@required (alias) on null", "data:\n  # @required\n  user: null\n", `data.user is required`),
			Entry("@validate isShellSafe", "data:\n  # @validate isShellSafe(value)\n  command: \"rm -rf / ; echo\"\n", `data.command ("rm -rf / ; echo") fails @validate isShellSafe(value)`),
			Entry("@validate isIPv4 || isIPv6", "data:\n  # @validate isIPv4(value) || isIPv6(value)\n  addr: nope\n", `data.addr ("nope") fails`),
			Entry("nested keys", "data:\n  web:\n    # @validate is_int(value)\n    port: eighty\n", `data.web.port ("eighty") fails`),
		)

		It("data annotations: false and 0 satisfy @require; an override satisfies an empty base; typos warn", func() {
			doc := `
hierarchy: {order: ["env:${ lookup('facts.env') }"]}
data:
  # @require
  enabled: false
  # @require
  count: 0
  # @require
  user: ""
  # @requiire
  other: 1
overrides:
  env:prod: {user: alice}
`
			h := hiera(doc)
			Expect(h.Warnings).To(ConsistOf(ContainSubstring(`data.other: unknown annotation "@requiire"`)))
			res, err := h.ResolveWith(map[string]any{"env": "prod"}, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(res.Data["user"]).To(Equal("alice"))
			_, err = h.ResolveWith(map[string]any{"env": "dev"}, nil)
			Expect(err).To(MatchError(manifest.ErrValidation))
		})
	})

	Describe("docs/content/templates/_index.md of choria-io/ccm", func() {
		facts := map[string]any{
			"host":    map[string]any{"info": map[string]any{"platformFamily": "rhel", "hostname": "web01", "os": "linux"}},
			"network": map[string]any{"interfaces": []any{map[string]any{"name": "lo"}, map[string]any{"name": "eth0"}}},
		}
		env := templates.New(facts, map[string]any{"packages": []any{"a", "b"}}, templates.WithEnviron([]string{"HOME=/home/ccm"}))

		DescribeTable("accessing data: both syntaxes, the variables and lookup's GJSON paths",
			func(src string, want string) {
				Expect(env.ExpandString(src)).To(Equal(want))
			},
			Entry("{{ lookup }}", "{{ lookup('facts.host.info.platformFamily') }}", "rhel"),
			Entry("${ lookup }", "${ lookup('facts.host.info.platformFamily') }", "rhel"),
			Entry("Facts variable", "${ Facts.host.info.platformFamily }", "rhel"),
			Entry("lookup with a default, key present", `${ lookup("facts.host.info.os", "linux") }`, "linux"),
			Entry("array index", `${ lookup("facts.network.interfaces.0.name") }`, "lo"),
			Entry("array length", `${ lookup("data.packages.#") }`, "2"),
			Entry("CLI: a default when data lacks the key", `${ lookup("data.package_name", "httpd") }`, "httpd"),
			Entry("Environ", "${ Environ.HOME }", "/home/ccm"),
			Entry("environ via lookup with a default", "${ lookup('environ.MY_VAR', 'default') }", "default"),
		)

		It("the ./.hiera example: the package name follows platformFamily", func() {
			doc := `
hierarchy:
  order:
    - os:${ lookup('facts.host.info.platformFamily') }
  merge: first

data:
  package_name: ""

overrides:
  os:debian:
    package_name: apache2

  os:rhel:
    package_name: httpd
`
			for family, want := range map[string]string{"rhel": "httpd", "debian": "apache2"} {
				data := resolve(doc, map[string]any{"host": map[string]any{"info": map[string]any{"platformFamily": family}}})
				Expect(templates.New(nil, data).ExpandString(`${ lookup("data.package_name") }`)).To(Equal(want))
			}
		})
	})

	Describe("docs/content/yamlmanifests/_index.md of choria-io/ccm", func() {
		It("the complete manifest: package apache2 on Debian, httpd elsewhere (--render)", func() {
			doc := `
data:
  package_name: "httpd"

ccm:
  resources:
    - package:
        - "${ lookup('data.package_name') }":
             ensure: latest

hierarchy:
  order:
    - os:${ lookup('facts.host.info.platformFamily') }

overrides:
  os:debian:
    package_name: apache2
`
			m, err := manifest.Parse([]byte(doc), manifest.ParseOptions{})
			Expect(err).NotTo(HaveOccurred())
			for family, want := range map[string]string{"debian": "apache2", "rhel": "httpd"} {
				r, err := m.Resolve(manifest.RunOptions{Facts: map[string]any{"host": map[string]any{"info": map[string]any{"platformFamily": family}}}})
				Expect(err).NotTo(HaveOccurred())
				Expect(r.Data).To(Equal(map[string]any{"package_name": want}))
				Expect(r.Resources).To(HaveLen(1))
				Expect(r.Resources[0].Type).To(Equal("package"))
				Expect(r.Resources[0].Properties).To(HaveKeyWithValue("name", want))
				Expect(r.Resources[0].Properties).To(HaveKeyWithValue("ensure", "latest"))
			}
		})

		It("setting defaults: the first two files inherit them, /app/bin/app overrides the mode, /etc/motd is apart", func() {
			dir := GinkgoT().TempDir()
			for _, f := range []string{"file.conf", "app.bin", "motd.txt"} {
				Expect(os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600)).To(Succeed())
			}
			doc := `
ccm:
  resources:
    - file:
        - defaults:
            owner: app
            group: app
            mode: "0644"
            ensure: present
        - /app/config/file.conf:
            source: file.conf
        - /app/bin/app:
            source: app.bin
            mode: "0700"

    - file:
        - /etc/motd:
            ensure: present
            source: motd.txt
            owner: root
            group: root
            mode: "0644"
`
			m, err := manifest.Parse([]byte(doc), manifest.ParseOptions{WorkingDir: dir})
			Expect(err).NotTo(HaveOccurred())
			r, err := m.Resolve(manifest.RunOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(r.Resources).To(HaveLen(3))
			want := []map[string]any{
				{"name": "/app/config/file.conf", "owner": "app", "group": "app", "mode": "0644", "ensure": "present"},
				{"name": "/app/bin/app", "owner": "app", "group": "app", "mode": "0700", "ensure": "present"},
				{"name": "/etc/motd", "owner": "root", "group": "root", "mode": "0644", "ensure": "present"},
			}
			for i, w := range want {
				for k, v := range w {
					Expect(r.Resources[i].Properties).To(HaveKeyWithValue(k, v), "resource %d %s", i, k)
				}
			}
		})
	})

	// docs/content/resources/apply.md of choria-io/ccm (its design
	// counterpart, docs/content/design/apply/_index.md, states the same
	// rules); manifest/apply_test.go holds the other rules of both pages.
	Describe("docs/content/resources/apply.md of choria-io/ccm", func() {
		var dir string
		BeforeEach(func() { dir = GinkgoT().TempDir() })
		write := func(rel, doc string) string {
			GinkgoHelper()
			p := filepath.Join(dir, rel)
			Expect(os.MkdirAll(filepath.Dir(p), 0o755)).To(Succeed())
			Expect(os.WriteFile(p, []byte(strings.ReplaceAll(doc, "DIR", dir)), 0o644)).To(Succeed())
			return p
		}
		run := func(path string) *manifest.Report {
			GinkgoHelper()
			m, err := manifest.Load(path)
			Expect(err).NotTo(HaveOccurred())
			rep, err := manifest.Run(GinkgoT().Context(), realEngine(), m, manifest.RunOptions{})
			Expect(err).NotTo(HaveOccurred())
			return rep
		}
		child := func(out, content string) string {
			return "ccm:\n  resources:\n    - file:\n        - DIR/" + out + ":\n            content: \"" + content + "\"\n            owner: root\n            group: root\n            mode: \"0644\"\n"
		}

		// The page's opening example: "This executes two child manifests
		// in order. The second receives additional data that its templates
		// can reference."
		It("the opening example: two child manifests in order, the second with data its templates read", func() {
			write("networking/manifest.yaml", child("net.conf", "net"))
			write("monitoring/manifest.yaml", "data: {alert_email: nobody}\n"+child("mon.conf", "{{ lookup('data.alert_email') }}"))
			parent := write("manifest.yaml", `
ccm:
  resources:
    - apply:
        - networking/manifest.yaml: {}

        - monitoring/manifest.yaml:
            data:
              alert_email: ops@example.com
`)
			rep := run(parent)
			var order []string
			for _, ev := range rep.Events {
				order = append(order, ev.ResourceID())
			}
			Expect(order).To(Equal([]string{
				"file#" + dir + "/net.conf", "apply#networking/manifest.yaml",
				"file#" + dir + "/mon.conf", "apply#monitoring/manifest.yaml",
			}))
			Expect(os.ReadFile(filepath.Join(dir, "mon.conf"))).To(Equal([]byte("ops@example.com")))
		})

		// "Subscribe behavior": "The exec resource runs only if the child
		// manifest made changes." The page spells refresh_only, a key
		// CCM's exec (model/resource_exec.go, refreshonly) does not read;
		// the project takes it as refreshonly.
		It("subscribe behavior: the exec runs only if the child manifest made changes", func() {
			write("config/manifest.yaml", child("config.conf", "v1"))
			parent := write("manifest.yaml", `
ccm:
  resources:
    - apply:
        - config/manifest.yaml: {}

    - exec:
        - notify:
            command: "/bin/sh -c 'echo notified >> DIR/notified'"
            refresh_only: true
            subscribe:
              - apply#config/manifest.yaml
`)
			run(parent)
			Expect(os.ReadFile(filepath.Join(dir, "notified"))).To(Equal([]byte("notified\n")))
			run(parent)
			Expect(os.ReadFile(filepath.Join(dir, "notified"))).To(Equal([]byte("notified\n")), "the child changed nothing the second time")
		})

		// "Path resolution": sub/manifest.yaml, then lib/manifest.yaml
		// relative to sub/.
		It("path resolution: each level relative to its own manifest's directory", func() {
			write("sub/lib/manifest.yaml", child("lib.conf", "lib"))
			write("sub/manifest.yaml", "ccm:\n  resources:\n    - apply:\n        - lib/manifest.yaml: {}\n")
			run(write("manifest.yaml", "ccm:\n  resources:\n    - apply:\n        - sub/manifest.yaml: {}\n"))
			Expect(os.ReadFile(filepath.Join(dir, "lib.conf"))).To(Equal([]byte("lib")))
		})
	})

	// docs/content/resources/file.md of choria-io/ccm: owner, group and
	// mode are "Required unless ensure: absent" (CCM's
	// model/resource_file.go refuses "owner cannot be empty"; the project
	// words it "property owner is required"). ccm-agent ensure file fills
	// them in on the command line, as CCM's CLI does.
	DescribeTable("docs/content/resources/file.md: owner, group and mode are required unless ensure: absent",
		func(props string, problem string) {
			dir := GinkgoT().TempDir()
			doc := "ccm:\n  resources:\n    - file:\n        - " + dir + "/f:\n" + props
			m, err := manifest.Parse([]byte(doc), manifest.ParseOptions{WorkingDir: dir})
			Expect(err).NotTo(HaveOccurred())
			_, err = manifest.Run(GinkgoT().Context(), realEngine(), m, manifest.RunOptions{})
			if problem == "" {
				Expect(err).NotTo(HaveOccurred())
				return
			}
			Expect(err).To(MatchError(resources.ErrInvalid))
			Expect(err.Error()).To(ContainSubstring(problem))
			Expect(filepath.Join(dir, "f")).NotTo(BeAnExistingFile())
		},
		Entry("no owner", "            content: x\n            group: root\n            mode: \"0644\"\n", "property owner is required"),
		Entry("no group", "            content: x\n            owner: root\n            mode: \"0644\"\n", "property group is required"),
		Entry("no mode", "            content: x\n            owner: root\n            group: root\n", "property mode is required"),
		Entry("absent needs none", "            ensure: absent\n", ""),
	)

	Describe("docs/content/monitoring/_index.md of choria-io/ccm", func() {
		var dir string
		BeforeEach(func() { dir = GinkgoT().TempDir() })
		run := func(doc string, opts manifest.RunOptions) *manifest.Report {
			GinkgoHelper()
			m, err := manifest.Parse([]byte(strings.ReplaceAll(doc, "DIR", dir)), manifest.ParseOptions{WorkingDir: dir})
			Expect(err).NotTo(HaveOccurred())
			reg, err := providers.Builtin(providers.Options{Runner: runner.Exec{}})
			Expect(err).NotTo(HaveOccurred())
			eng := engine.New(reg, engine.WithHealthRunner(providers.HealthRunner(runner.Exec{})), engine.WithGossRunner(gossrun.New()))
			rep, err := manifest.Run(GinkgoT().Context(), eng, m, opts)
			Expect(err).NotTo(HaveOccurred())
			return rep
		}
		fileWithCheck := func(check string) string {
			return "ccm:\n  resources:\n    - file:\n        - DIR/f:\n            content: x\n            owner: root\n            group: root\n            mode: \"0644\"\n            health_checks:\n" + check
		}

		// "Nagios format": the page's exit code table. A check that is
		// not OK fails the resource (CCM's resources/base/base.go).
		DescribeTable("Nagios format: the exit code table",
			func(code int, status string) {
				ev := run(fileWithCheck(fmt.Sprintf("              - name: probe\n                command: \"/bin/sh -c 'exit %d'\"\n", code)), manifest.RunOptions{}).Events[0]
				Expect(ev.HealthChecks).To(HaveLen(1))
				Expect(ev.HealthChecks[0].Status).To(Equal(status))
				Expect(ev.Failed).To(Equal(status != protocol.HealthOK))
			},
			Entry("0 OK", 0, protocol.HealthOK),
			Entry("1 WARNING", 1, protocol.HealthWarning),
			Entry("2 CRITICAL", 2, protocol.HealthCritical),
			Entry("3 UNKNOWN", 3, protocol.HealthUnknown),
			Entry("4 (3+) UNKNOWN", 4, protocol.HealthUnknown),
		)

		// The Nagios example's shape: a YAML block command, name, tries,
		// try_sleep and timeout ("retries up to 5 times with 1 second
		// between attempts").
		It("the Nagios example: retries until the check passes", func() {
			ev := run(fileWithCheck(`              - name: check_http
                command: |
                  /bin/sh -c 'n=$(cat DIR/tries 2>/dev/null || echo 0); echo $((n+1)) > DIR/tries; test $n -ge 2 && echo Acme Inc || exit 2'
                tries: 5
                try_sleep: 1s
                timeout: 10s
`), manifest.RunOptions{}).Events[0]
			Expect(ev.Failed).To(BeFalse(), "%v", ev.Errors)
			Expect(ev.HealthChecks[0].Name).To(Equal("check_http"))
			Expect(ev.HealthChecks[0].Status).To(Equal(protocol.HealthOK))
			Expect(ev.HealthChecks[0].Message).To(Equal("Acme Inc"))
			Expect(os.ReadFile(filepath.Join(dir, "tries"))).To(Equal([]byte("3\n")))
		})

		// "Templates in Goss rules": rules are expanded with Data and
		// lookup() before goss reads them; "OK when all Goss rules pass,
		// or CRITICAL when any rule fails".
		It("goss rules: templates with Data and lookup(); OK when all pass, CRITICAL when one fails", func() {
			doc := "data:\n  config_path: DIR/f\n  expected_response: x\n" + fileWithCheck(`              - name: app_check
                goss_rules:
                  file:
                    "{{ Data.config_path }}":
                      exists: true
                      contents: ["{{ lookup('data.expected_response', 'ok') }}"]
`)
			ev := run(doc, manifest.RunOptions{}).Events[0]
			Expect(ev.HealthChecks[0].Status).To(Equal(protocol.HealthOK), "%v", ev.Errors)
			ev = run(doc, manifest.RunOptions{Data: map[string]any{"expected_response": "absent-canary"}}).Events[0]
			Expect(ev.HealthChecks[0].Status).To(Equal(protocol.HealthCritical))
			Expect(ev.Failed).To(BeTrue())
		})

		// "Each health check must specify either command or goss_rules --
		// they are mutually exclusive."
		It("refuses command together with goss_rules", func() {
			m, err := manifest.Parse([]byte(strings.ReplaceAll(fileWithCheck("              - command: /bin/true\n                goss_rules: {file: {/etc: {exists: true}}}\n"), "DIR", dir)), manifest.ParseOptions{WorkingDir: dir})
			if err == nil {
				_, err = manifest.Run(GinkgoT().Context(), realEngine(), m, manifest.RunOptions{})
			}
			Expect(err).To(MatchError(ContainSubstring("command and goss_rules are mutually exclusive")))
		})
	})
})
