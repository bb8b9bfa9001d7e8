package integration_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/ccm-fleet/ccm/protocol"
)

// compileCCMSchemas compiles the ensure request and response schemas (the
// request schema refers to the manifest schema for the properties).
func compileCCMSchemas() (request, response *jsonschema.Schema) {
	GinkgoHelper()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	for _, name := range []string{"manifest.schema.json", "ensure_request.schema.json", "ensure_response.schema.json"} {
		f, err := os.Open(filepath.Join("..", "schemas", name))
		Expect(err).ToNot(HaveOccurred())
		doc, err := jsonschema.UnmarshalJSON(f)
		_ = f.Close()
		Expect(err).ToNot(HaveOccurred(), name)
		Expect(c.AddResource("https://github.com/ccm-fleet/ccm/schemas/"+name, doc)).To(Succeed())
	}
	var err error
	request, err = c.Compile("https://github.com/ccm-fleet/ccm/schemas/ensure_request.schema.json")
	Expect(err).ToNot(HaveOccurred())
	response, err = c.Compile("https://github.com/ccm-fleet/ccm/schemas/ensure_response.schema.json")
	Expect(err).ToNot(HaveOccurred())
	return request, response
}

// schemaInstance turns a JSON or YAML document into what the validator reads.
func schemaInstance(doc []byte) any {
	GinkgoHelper()
	js := doc
	if protocol.DetectEncoding(doc) == protocol.EncodingYAML {
		var err error
		js, err = protocol.YAMLToJSON(doc, protocol.Limits{})
		Expect(err).ToNot(HaveOccurred())
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	Expect(err).ToNot(HaveOccurred())
	return v
}

// pipeResult is what one ccm-agent ensure api pipe run produced.
type pipeResult struct {
	code int
	raw  []byte
	resp map[string]any
}

// state returns the response's transaction event.
func (r pipeResult) state() map[string]any {
	GinkgoHelper()
	st, ok := r.resp["state"].(map[string]any)
	Expect(ok).To(BeTrue(), "no state in %s", r.raw)
	return st
}

// status returns the event's status document.
func (r pipeResult) status() map[string]any {
	GinkgoHelper()
	st, ok := r.state()["status"].(map[string]any)
	Expect(ok).To(BeTrue(), "no status in %s", r.raw)
	return st
}

// normalEvent drops what differs between two applies of the same resource
// on the same host: ids, times and durations.
func normalEvent(ev map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range ev {
		switch k {
		case "event_id", "timestamp", "duration":
			continue
		case "status":
			if st, ok := v.(map[string]any); ok {
				cp := map[string]any{}
				for sk, sv := range st {
					if sk != "timestamp" {
						cp[sk] = sv
					}
				}
				v = cp
			}
		}
		out[k] = v
	}
	return out
}

var _ = Describe("Coming from CCM", Ordered, func() {
	var (
		agentBin          string
		reqSchema, schema *jsonschema.Schema
		dir               string
	)

	BeforeAll(func() {
		var err error
		agentBin, err = gexec.Build("github.com/ccm-fleet/ccm/cmd/ccm-agent")
		Expect(err).ToNot(HaveOccurred())
		reqSchema, schema = compileCCMSchemas()
	})

	BeforeEach(func() {
		dir = GinkgoT().TempDir()
	})

	// pipe runs ccm-agent ensure api pipe in dir with the request on stdin,
	// with a variable in its environment that no command may see.
	pipe := func(request string, args ...string) pipeResult {
		GinkgoHelper()
		cmd := exec.Command(agentBin, append([]string{"ensure", "api", "pipe"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CCM_CALLER_SECRET=leaked", "LANG=de_DE.UTF-8")
		cmd.Stdin = strings.NewReader(request)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		r := pipeResult{raw: out.Bytes()}
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			r.code = ee.ExitCode()
		default:
			Fail(err.Error())
		}
		if !slices.Contains(args, "--yaml") {
			Expect(json.Unmarshal(out.Bytes(), &r.resp)).To(Succeed(), "stdout %q stderr %q", out.String(), errb.String())
			Expect(schema.Validate(schemaInstance(out.Bytes()))).To(Succeed(), "response %s", out.String())
		}
		return r
	}
	// request renders a JSON request for typ with props.
	request := func(typ string, props map[string]any) string {
		b, err := json.Marshal(map[string]any{"protocol": protocol.EnsureRequestProtocol, "type": typ, "properties": props})
		Expect(err).ToNot(HaveOccurred())
		Expect(reqSchema.Validate(schemaInstance(b))).To(Succeed(), string(b))
		return string(b)
	}
	fileProps := func(name, content, mode string) map[string]any {
		return map[string]any{"name": name, "ensure": "present", "content": content, "owner": "root", "group": "root", "mode": mode}
	}
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }

	// The compatibility table: one row per CCM behaviour a script or event
	// consumer relies on, with the output shape CCM gives.
	Describe("the compatibility table", func() {
		It("stdin API, JSON request: one response with CCM's protocol id, exit 0, the status re-read after the change and stable", func() {
			path := filepath.Join(dir, "motd")
			r := pipe(request("file", fileProps(path, "Welcome\n", "0644")))
			Expect(r.code).To(Equal(0))
			Expect(r.resp["protocol"]).To(Equal("io.choria.ccm.v1.resource.ensure.response"))
			Expect(r.resp).NotTo(HaveKey("error"))
			ev := r.state()
			Expect(ev["protocol"]).To(Equal("io.choria.ccm.v1.transaction.event"))
			Expect(ev["changed"]).To(BeTrue())
			Expect(ev["final_ensure"]).To(Equal("present"))
			st := r.status()
			Expect(st["ensure"]).To(Equal("present"), "the state after the change, not before")
			Expect(st["stable"]).To(BeTrue())
			Expect(st["changed"]).To(BeTrue())
			Expect(st["metadata"]).To(HaveKeyWithValue("checksum", sum("Welcome\n")))
			Expect(os.ReadFile(path)).To(Equal([]byte("Welcome\n")))
		})

		It("stdin API, YAML request: the same response (JSON unless --yaml)", func() {
			path := filepath.Join(dir, "motd")
			doc := fmt.Sprintf("protocol: %s\ntype: file\nproperties:\n  name: %s\n  content: \"hi\\n\"\n  owner: root\n  group: root\n  mode: \"0644\"\n", protocol.EnsureRequestProtocol, path)
			Expect(reqSchema.Validate(schemaInstance([]byte(doc)))).To(Succeed())
			r := pipe(doc)
			Expect(r.code).To(Equal(0))
			Expect(r.state()["changed"]).To(BeTrue())
			Expect(r.status()["stable"]).To(BeTrue())
		})

		It("stdin API, --yaml: the response as YAML, as CCM writes it: the JSON document's fields, durations as Go durations", func() {
			r := pipe(request("file", fileProps(filepath.Join(dir, "y"), "y", "0644")), "--yaml")
			Expect(r.code).To(Equal(0))
			var doc map[string]any
			Expect(yaml.Unmarshal(r.raw, &doc)).To(Succeed())
			Expect(doc["protocol"]).To(Equal(protocol.EnsureResponseProtocol))
			Expect(doc["state"]).To(HaveKeyWithValue("changed", true))
			state := doc["state"].(map[string]any)
			d, ok := state["duration"].(string)
			Expect(ok).To(BeTrue(), "duration %v is CCM's Go duration text", state["duration"])
			dur, err := time.ParseDuration(d)
			Expect(err).NotTo(HaveOccurred())
			// With the duration in nanoseconds, as JSON has it, the document
			// is the schema's.
			state["duration"] = dur.Nanoseconds()
			js, err := json.Marshal(doc)
			Expect(err).NotTo(HaveOccurred())
			Expect(schema.Validate(schemaInstance(js))).To(Succeed())
		})

		It("stdin API, --noop: nothing changes, the event says what would, the status is as found and not stable", func() {
			path := filepath.Join(dir, "motd")
			r := pipe(request("file", fileProps(path, "x", "0644")), "--noop")
			Expect(r.code).To(Equal(0))
			Expect(r.state()["noop"]).To(BeTrue())
			Expect(r.state()["noop_message"]).To(Equal("Would have created the file"))
			Expect(r.status()["ensure"]).To(Equal("absent"))
			Expect(r.status()["stable"]).To(BeFalse())
			Expect(path).NotTo(BeAnExistingFile())
		})

		DescribeTable("stdin API, a request that cannot be processed: a response whose error says why, no state, exit 0 as CCM",
			func(doc string, want string) {
				r := pipe(doc)
				Expect(r.code).To(Equal(0))
				Expect(r.resp["protocol"]).To(Equal(protocol.EnsureResponseProtocol))
				Expect(r.resp).NotTo(HaveKey("state"))
				Expect(r.resp["error"]).To(ContainSubstring(want))
			},
			Entry("a wrong protocol", `{"protocol":"wrong.protocol","type":"file","properties":{"name":"/x"}}`, `"wrong.protocol"`),
			Entry("no type", `{"protocol":"io.choria.ccm.v1.resource.ensure.request","properties":{"name":"/x"}}`, `"type" is required`),
			Entry("no properties", `{"protocol":"io.choria.ccm.v1.resource.ensure.request","type":"file"}`, `"properties" is required`),
			Entry("an unknown type", `{"protocol":"io.choria.ccm.v1.resource.ensure.request","type":"pakage","properties":{"name":"x"}}`, `pakage`),
			Entry("an unknown property", `{"protocol":"io.choria.ccm.v1.resource.ensure.request","type":"file","properties":{"name":"/x","colour":"red"}}`, `unknown property "colour"`),
			Entry("an unknown member", `{"protocol":"io.choria.ccm.v1.resource.ensure.request","type":"file","properties":{"name":"/x"},"extra":1}`, `extra`),
			Entry("not a document", `]]`, `request`),
			Entry("empty stdin", ``, `request`),
			Entry("invalid properties", `{"protocol":"io.choria.ccm.v1.resource.ensure.request","type":"file","properties":{"name":"relative"}}`, `absolute`),
		)

		It("failed event: error listed, failed true, status null and final_ensure empty as CCM; still exit 0", func() {
			r := pipe(request("exec", map[string]any{"name": "/bin/false"}))
			Expect(r.code).To(Equal(0))
			ev := r.state()
			Expect(ev["failed"]).To(BeTrue())
			Expect(ev["error"]).NotTo(BeEmpty())
			Expect(ev).To(HaveKeyWithValue("status", BeNil()))
			Expect(ev["final_ensure"]).To(Equal(""))
		})

		It("exec status: exitcode and creates_satisfied at the top under CCM's names, not under metadata", func() {
			flag := filepath.Join(dir, "done")
			r := pipe(request("exec", map[string]any{"name": "/usr/bin/touch " + flag, "creates": flag}))
			Expect(r.state()["changed"]).To(BeTrue())
			st := r.status()
			Expect(st["exitcode"]).To(BeEquivalentTo(0))
			Expect(st["creates_satisfied"]).To(BeTrue())
			Expect(st["stable"]).To(BeTrue())
			Expect(st["metadata"]).NotTo(HaveKey("exit_code"))
			Expect(st["metadata"]).NotTo(HaveKey("creates_satisfied"))

			r = pipe(request("exec", map[string]any{"name": "/usr/bin/touch " + flag, "creates": flag}))
			Expect(r.state()["changed"]).To(BeFalse())
			Expect(r.status()).NotTo(HaveKey("exitcode"), "not run, no exit code")
			Expect(r.status()["creates_satisfied"]).To(BeTrue())
		})

		It("exec environment: CCM's fixed base (PATH, LANG=C, LC_ALL=C) plus the resource's, nothing of the caller's", func() {
			out := filepath.Join(dir, "env.out")
			r := pipe(request("exec", map[string]any{"name": "/bin/sh -c 'env > " + out + "'", "environment": []string{"APP=1"}}))
			Expect(r.state()["failed"]).To(BeFalse(), "%s", r.raw)
			b, err := os.ReadFile(out)
			Expect(err).ToNot(HaveOccurred())
			env := string(b)
			Expect(env).To(ContainSubstring("PATH=/usr/bin:/bin:/usr/sbin:/sbin:/usr/local/bin:/usr/local/sbin\n"))
			Expect(env).To(ContainSubstring("LANG=C\n"))
			Expect(env).To(ContainSubstring("LC_ALL=C\n"))
			Expect(env).To(ContainSubstring("APP=1\n"))
			Expect(env).NotTo(ContainSubstring("leaked"))
			Expect(env).NotTo(ContainSubstring("de_DE"))
		})

		It("file noop, only attributes differ, content set: CCM's \"Would have created the file\", then what differs", func() {
			path := filepath.Join(dir, "motd")
			Expect(os.WriteFile(path, []byte("same"), 0o600)).To(Succeed())
			r := pipe(request("file", fileProps(path, "same", "0644")), "--noop")
			Expect(r.state()["noop_message"]).To(Equal("Would have created the file: mode 0600 should be 0644"))
		})

		It("directory mode: search bits where read is granted (0644 makes 0755)", func() {
			path := filepath.Join(dir, "d")
			r := pipe(request("file", map[string]any{"name": path, "ensure": "directory", "owner": "root", "group": "root", "mode": "0644"}))
			Expect(r.state()["failed"]).To(BeFalse(), "%s", r.raw)
			Expect(r.status()["metadata"]).To(HaveKeyWithValue("mode", "0755"))
			fi, err := os.Stat(path)
			Expect(err).ToNot(HaveOccurred())
			Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o755)))
		})

		It("an existing directory where a file should be: an error naming it, the directory left alone", func() {
			path := filepath.Join(dir, "conf")
			Expect(os.Mkdir(path, 0o755)).To(Succeed())
			r := pipe(request("file", fileProps(path, "x", "0644")))
			Expect(r.state()["failed"]).To(BeTrue())
			Expect(r.state()["error"]).To(ContainElement(ContainSubstring(path + ": is a directory where a file should be")))
			Expect(path).To(BeADirectory())
		})

		It("scaffold: a source that renders no file is an error; a file:// URL source renders", func() {
			Expect(os.Mkdir(filepath.Join(dir, "empty"), 0o755)).To(Succeed())
			target := filepath.Join(dir, "out")
			r := pipe(request("scaffold", map[string]any{"name": target, "source": "empty"}))
			Expect(r.state()["failed"]).To(BeTrue())
			Expect(r.state()["error"]).To(ContainElement(ContainSubstring("at least one stable file must exist")))
			Expect(target).NotTo(BeADirectory())

			Expect(os.MkdirAll(filepath.Join(dir, "tpl"), 0o755)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(dir, "tpl", "a.conf"), []byte("a=1\n"), 0o644)).To(Succeed())
			r = pipe(request("scaffold", map[string]any{"name": target, "source": "file://" + filepath.Join(dir, "tpl")}))
			Expect(r.state()["failed"]).To(BeFalse(), "%s", r.raw)
			Expect(r.status()["metadata"]).To(HaveKeyWithValue("stable", ConsistOf(filepath.Join(target, "a.conf"))))
		})
	})

	DescribeTable("the response schema refuses what is not CCM's shape",
		func(doc string) {
			Expect(schema.Validate(schemaInstance([]byte(doc)))).NotTo(Succeed())
		},
		Entry("another protocol", `{"protocol":"io.choria.ccm.v1.resource.ensure.request","error":"x"}`),
		Entry("both error and state", `{"protocol":"io.choria.ccm.v1.resource.ensure.response","error":"x","state":{}}`),
		Entry("neither", `{"protocol":"io.choria.ccm.v1.resource.ensure.response"}`),
		Entry("a failed event with a status", `{"protocol":"io.choria.ccm.v1.resource.ensure.response","state":{"protocol":"io.choria.ccm.v1.transaction.event",
			"event_id":"1","timestamp":"2026-01-01T00:00:00Z","type":"file","provider":"posix","name":"/x","requested_ensure":"present","final_ensure":"",
			"duration":1,"properties":{},"status":{"timestamp":"2026-01-01T00:00:00Z","protocol":"io.choria.ccm.v1.resource.file.state","type":"file",
			"name":"/x","ensure":"absent","changed":false,"refreshed":false,"stable":false,"noop":false},"error":["x"],"changed":false,"refreshed":false,
			"failed":true,"skipped":false,"noop":false,"unmet_requirements":[]}}`),
		Entry("an exec exit code under metadata", `{"protocol":"io.choria.ccm.v1.resource.ensure.response","state":{"protocol":"io.choria.ccm.v1.transaction.event",
			"event_id":"1","timestamp":"2026-01-01T00:00:00Z","type":"exec","provider":"posix","name":"/bin/true","requested_ensure":"present","final_ensure":"present",
			"duration":1,"properties":{},"status":{"timestamp":"2026-01-01T00:00:00Z","protocol":"io.choria.ccm.v1.resource.exec.state","type":"exec",
			"name":"/bin/true","ensure":"present","changed":true,"refreshed":false,"stable":true,"noop":false,"metadata":{"exit_code":0}},"error":[],"changed":true,"refreshed":false,
			"failed":false,"skipped":false,"noop":false,"unmet_requirements":[]}}`),
	)

	DescribeTable("the request schema refuses what ensure api pipe refuses",
		func(doc string) {
			Expect(reqSchema.Validate(schemaInstance([]byte(doc)))).NotTo(Succeed())
			r := pipe(doc)
			Expect(r.resp).To(HaveKey("error"))
		},
		Entry("an unknown property", `{"protocol":"io.choria.ccm.v1.resource.ensure.request","type":"file","properties":{"name":"/x","colour":"red"}}`),
		Entry("no name", `{"protocol":"io.choria.ccm.v1.resource.ensure.request","type":"package","properties":{"ensure":"present"}}`),
		Entry("an unknown type", `{"protocol":"io.choria.ccm.v1.resource.ensure.request","type":"pakage","properties":{"name":"x"}}`),
		Entry("an unknown member", `{"protocol":"io.choria.ccm.v1.resource.ensure.request","type":"file","properties":{"name":"/x"},"extra":1}`),
	)

	Describe("CCM's documented command lines", func() {
		run := func(args ...string) (int, string) {
			GinkgoHelper()
			cmd := exec.Command(agentBin, args...)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				Fail(err.Error())
			}
			return cmd.ProcessState.ExitCode(), string(out)
		}

		It("--noop before the type, --owner user:group, --contents", func() {
			path := filepath.Join(dir, "motd")
			code, out := run("ensure", "--noop", "file", path, "--owner", "root:root", "--mode", "0644", "--contents", "hi")
			Expect(code).To(Equal(5), out)
			Expect(out).To(ContainSubstring("Would have created the file"))
			code, out = run("ensure", "file", path, "--owner", "root:root", "--mode", "0644", "--contents", "hi", "--json")
			Expect(code).To(Equal(0), out)
			Expect(out).To(ContainSubstring(`"group": "root"`))
			Expect(schema.Validate(schemaInstance([]byte(out)))).To(Succeed(), "ensure --json prints the same response")
		})

		It("file --content-file (and --contents-file), archive --headers", func() {
			Expect(os.WriteFile(filepath.Join(dir, "motd.tpl"), []byte("host {{ lookup('facts.os') }}\n"), 0o644)).To(Succeed())
			for _, flag := range []string{"--content-file", "--contents-file"} {
				code, out := run("ensure", "--noop", "file", filepath.Join(dir, "motd"), flag, "motd.tpl", "--owner", "root:root", "--mode", "0644", "--fact", "os=debian", "--json")
				Expect(code).To(Equal(5), out)
				Expect(out).To(ContainSubstring(`"content": "host debian\n"`))
			}
			code, out := run("ensure", "--noop", "archive", filepath.Join(dir, "a.tar.gz"), "--url", "https://example.invalid/a.tar.gz",
				"--headers", "X-Token:abc", "--owner", "root:root", "--json")
			Expect(code).To(Equal(5), out)
			Expect(out).To(ContainSubstring(`"X-Token": "[redacted]"`))
		})

		It("exec --refresh-only and -e", func() {
			code, out := run("ensure", "exec", "/usr/bin/touch "+filepath.Join(dir, "never"), "--refresh-only", "-e", "A=1", "--json")
			Expect(code).To(Equal(0), out)
			Expect(filepath.Join(dir, "never")).NotTo(BeAnExistingFile())
			Expect(out).To(ContainSubstring(`"refreshonly": true`))
			Expect(out).To(ContainSubstring(`"A=1"`))
		})

		It("scaffold TARGET SOURCE [ENSURE] and archive FILE URL as positional arguments", func() {
			Expect(os.MkdirAll(filepath.Join(dir, "tpl"), 0o755)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(dir, "tpl", "a.conf"), []byte("a\n"), 0o644)).To(Succeed())
			code, out := run("ensure", "scaffold", filepath.Join(dir, "out"), "tpl")
			Expect(code).To(Equal(0), out)
			Expect(filepath.Join(dir, "out", "a.conf")).To(BeAnExistingFile())
			code, out = run("ensure", "--noop", "scaffold", filepath.Join(dir, "out"), "tpl", "absent")
			Expect(code).To(Equal(5), out)
			Expect(out).To(ContainSubstring("Would have removed 1 scaffold files"))

			code, out = run("ensure", "--noop", "archive", filepath.Join(dir, "a.tar.gz"), "https://example.invalid/a.tar.gz", "--owner", "root:root", "--json")
			Expect(code).To(Equal(5), out)
			Expect(out).To(ContainSubstring(`"url": "https://example.invalid/a.tar.gz"`))
		})

		It("refuses a property given both ways", func() {
			code, out := run("ensure", "scaffold", filepath.Join(dir, "out"), "tpl", "--source", "other")
			Expect(code).To(Equal(1))
			Expect(out).To(ContainSubstring("given both as an argument and as --source"))
		})
	})

	Describe("request examples of the CCM docs, and of exec, scaffold and directory requests", func() {
		var fl *fleet
		BeforeEach(func() {
			// The agents' facts select the same providers as this host's.
			fl = startFleet(3, "ccm", map[string]any{"os": "debian"})
		})

		// The CCM docs' examples verbatim (ccm ensure api pipe), and an exec
		// with creates, a scaffold with the jet engine and a directory as
		// requests; all under --noop, so nothing on this host changes.
		examples := func() map[string]string {
			tpl := filepath.Join(dir, "templates", "app")
			Expect(os.MkdirAll(tpl, 0o755)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(tpl, "app.conf"), []byte("name=app\n"), 0o644)).To(Succeed())
			return map[string]string{
				"docs: install a package (JSON)": `{"protocol": "io.choria.ccm.v1.resource.ensure.request", "type": "package", "properties": {"name": "htop", "ensure": "present"}}`,
				"docs: package (JSON)":           `{"protocol": "io.choria.ccm.v1.resource.ensure.request", "type": "package", "properties": {"name": "nginx", "ensure": "present"}}`,
				"docs: manage a service (YAML)":  "protocol: io.choria.ccm.v1.resource.ensure.request\ntype: service\nproperties:\n  name: nginx\n  ensure: running\n",
				"docs: create a file (JSON)": `{"protocol": "io.choria.ccm.v1.resource.ensure.request", "type": "file", "properties": {"name": "/etc/motd", "ensure": "present",
					"content": "Welcome to this server\n", "owner": "root", "group": "root", "mode": "0644"}}`,
				"docs: exec with creates (JSON)": `{"protocol": "io.choria.ccm.v1.resource.ensure.request", "type": "exec", "properties": {"name": "/usr/bin/touch /tmp/hello",
					"creates": "/tmp/hello", "timeout": "30s", "cwd": "/tmp"}}`,
				"docs: dry-run remove a package (JSON)": `{"protocol": "io.choria.ccm.v1.resource.ensure.request", "type": "package", "properties": {"name": "vim", "ensure": "absent"}}`,
				"exec with creates (YAML)": fmt.Sprintf("protocol: io.choria.ccm.v1.resource.ensure.request\ntype: exec\nproperties:\n  name: extract-archive\n  command: /usr/bin/touch %s\n  creates: %s\n",
					filepath.Join(dir, "extracted"), filepath.Join(dir, "extracted")),
				"scaffold with the jet engine (YAML)": fmt.Sprintf("protocol: io.choria.ccm.v1.resource.ensure.request\ntype: scaffold\nproperties:\n  name: %s\n  ensure: present\n  source: %s\n  engine: jet\n  purge: true\n",
					filepath.Join(dir, "etc", "app"), tpl),
				"a directory (JSON)": fmt.Sprintf(`{"protocol": "io.choria.ccm.v1.resource.ensure.request", "type": "file", "properties": {"name": %q, "ensure": "directory", "owner": "root", "group": "root", "mode": "0755"}}`,
					filepath.Join(dir, "srv")),
			}
		}

		It("go through ensure api pipe and through ccm-orch ensure --request to simulated agents with identical events", func() {
			for name, doc := range examples() {
				By(name)
				Expect(reqSchema.Validate(schemaInstance([]byte(doc)))).To(Succeed(), name)
				file := filepath.Join(dir, "request")
				Expect(os.WriteFile(file, []byte(doc), 0o644)).To(Succeed())

				local := pipe(doc, "--noop", "--fact", "os=debian")
				Expect(local.code).To(Equal(0))
				Expect(local.resp).NotTo(HaveKey("error"), name)
				want := normalEvent(local.state())

				_, res := fl.orchJSON("ensure", "--request", file, "--noop")
				hosts, _ := res["hosts"].([]any)
				Expect(hosts).To(HaveLen(3), name)
				for _, h := range hosts {
					hr := h.(map[string]any)
					events, _ := hr["events"].([]any)
					Expect(events).To(HaveLen(1), "%s: %v", name, hr)
					got := normalEvent(events[0].(map[string]any))
					Expect(got).To(Equal(want), "%s on %s", name, hr["identity"])
				}
			}
		})

		It("reads the request from stdin with --request -", func() {
			doc := `{"protocol": "io.choria.ccm.v1.resource.ensure.request", "type": "file", "properties": {"name": "/etc/motd", "ensure": "present", "content": "x", "owner": "root", "group": "root", "mode": "0644"}}`
			cmd := exec.Command(orchBin, "ensure", "--request", "-", "--noop", "--json")
			cmd.Env = append(cmd.Environ(), "CCM_SERVER="+fl.url)
			cmd.Stdin = strings.NewReader(doc)
			out, err := cmd.Output()
			var ee *exec.ExitError
			if err != nil {
				Expect(errors.As(err, &ee)).To(BeTrue())
			}
			var res map[string]any
			Expect(json.Unmarshal(out, &res)).To(Succeed())
			Expect(res["hosts"]).To(HaveLen(3))
		})

		DescribeTable("refuses a bad request document before sending anything",
			func(doc, want string) {
				file := filepath.Join(dir, "request")
				Expect(os.WriteFile(file, []byte(doc), 0o644)).To(Succeed())
				code, out, errOut := fl.orch("ensure", "--request", file)
				Expect(code).To(Equal(1))
				Expect(out).To(BeEmpty())
				Expect(errOut).To(ContainSubstring(want))
			},
			Entry("a wrong protocol", `{"protocol":"x","type":"file","properties":{"name":"/x"}}`, `"protocol"`),
			Entry("an unknown property", `{"protocol":"io.choria.ccm.v1.resource.ensure.request","type":"file","properties":{"name":"/x","colour":1}}`, `unknown property "colour"`),
			Entry("an empty file", ``, `empty document`),
		)
	})
})
