package execposix_test

import (
	"context"
	"time"

	"github.com/kballard/go-shellquote"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/execposix"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/exectype"
)

var _ = Describe("Command lines", func() {
	var (
		ctx  context.Context
		fake *runner.Fake
	)

	BeforeEach(func() {
		ctx = context.Background()
		fake = &runner.Fake{}
	})

	AfterEach(func() { Expect(fake.Verify()).To(Succeed()) })

	// Quotes and backslashes group words; $, | and > are plain text, since
	// no shell reads the line.
	DescribeTable("posix splits the command line with shell-like quoting and runs no shell",
		func(command string, argv []string) {
			fake.Expect(argv, 0, "")
			res, err := provider(execposix.NewPosixFactory(fake, nil)).Execute(ctx, newProps(command), command)
			Expect(err).NotTo(HaveOccurred())
			Expect(res.ExitCode).To(Equal(0))
		},
		Entry("simple words", "echo hello world", []string{"echo", "hello", "world"}),
		Entry("single quotes", "echo 'hello world'", []string{"echo", "hello world"}),
		Entry("double quotes", `echo "hello world"`, []string{"echo", "hello world"}),
		Entry("escaped spaces", `echo hello\ world`, []string{"echo", "hello world"}),
		Entry("mixed quoting", `echo "it's a test"`, []string{"echo", "it's a test"}),
		Entry("variables are not expanded", "/bin/echo $HOME", []string{"/bin/echo", "$HOME"}),
		Entry("pipes are arguments", "/bin/cat /etc/hosts | grep x", []string{"/bin/cat", "/etc/hosts", "|", "grep", "x"}),
	)

	DescribeTable("shell passes the whole command line to /bin/sh -c",
		func(command string) {
			fake.Expect([]string{"/bin/sh", "-c", command}, 0, "")
			res, err := provider(execposix.NewShellFactory(fake, nil)).Execute(ctx, newProps(command), command)
			Expect(err).NotTo(HaveOccurred())
			Expect(res.ExitCode).To(Equal(0))
		},
		Entry("pipes and redirections", "cat /var/log/app.log | grep ERROR | tail -100 > /tmp/errors.txt"),
		Entry("logical operators", "pgrep myapp || /opt/myapp/bin/start"),
		Entry("variables and substitution", "tar -czf /backup/home-$(date +%Y%m%d).tar.gz $HOME"),
		Entry("quotes kept as written", `echo "it's a test" 'x  y'`),
	)

	DescribeTable("passes cwd, environment, path, timeout and the output bound to the runner",
		func(f func(runner.Runner) resources.Factory, argv []string) {
			fake.Add(runner.Expectation{Argv: argv, Env: []string{"CC=gcc", "CFLAGS=-O2"}, Result: runner.Result{ExitCode: 2, Stdout: []byte("built\n"), Stderr: []byte("warn\n")}})
			p := newProps("build-app", func(p *exectype.Properties) {
				p.Command = "make build"
				p.Cwd = "/opt/app"
				p.Environment = []string{"CC=gcc", "CFLAGS=-O2"}
				p.Path = "/usr/local/bin:/usr/bin:/bin"
				p.Timeout = "5m"
			})
			res, err := provider(f(fake)).Execute(ctx, p, p.CommandLine())
			Expect(err).NotTo(HaveOccurred())
			Expect(res).To(Equal(&exectype.Result{ExitCode: 2, Stdout: []byte("built\n"), Stderr: []byte("warn\n")}))

			calls := fake.Calls()
			Expect(calls).To(HaveLen(1))
			Expect(calls[0].Dir).To(Equal("/opt/app"))
			Expect(calls[0].Env).To(Equal([]string{"CC=gcc", "CFLAGS=-O2"}))
			Expect(calls[0].SearchPath).To(Equal("/usr/local/bin:/usr/bin:/bin"))
			Expect(calls[0].Timeout).To(Equal(5 * time.Minute))
			Expect(calls[0].MaxOutput).To(Equal(64 << 10))
		},
		Entry("posix", func(r runner.Runner) resources.Factory { return execposix.NewPosixFactory(r, nil) }, []string{"make", "build"}),
		Entry("shell", func(r runner.Runner) resources.Factory { return execposix.NewShellFactory(r, nil) }, []string{"/bin/sh", "-c", "make build"}),
	)

	// An empty command, a line whose quoting does not close and a provider
	// built without a runner are refused before anything runs.
	DescribeTable("refuses what it cannot run, running nothing",
		func(f func(runner.Runner) resources.Factory, command string, want error, wantText string) {
			_, err := provider(f(fake)).Execute(ctx, newProps("/bin/true"), command)
			Expect(err).To(MatchError(want))
			Expect(err).To(MatchError(ContainSubstring(wantText)))
			Expect(fake.Calls()).To(BeEmpty())
		},
		Entry("posix, empty command", posixWith, "   ", exectype.ErrNoCommand, "posix provider: no command specified"),
		Entry("posix, invalid quoting", posixWith, "echo 'oops", shellquote.UnterminatedSingleQuoteError, "Unterminated single-quoted string"),
		Entry("posix, no runner", func(runner.Runner) resources.Factory { return unbuilt(execposix.PosixName) }, "/bin/true", execposix.ErrNoRunner, "no command runner configured"),
		Entry("shell, empty command", shellWith, "", exectype.ErrNoCommand, "shell provider: no command specified"),
		Entry("shell, no runner", func(runner.Runner) resources.Factory { return unbuilt(execposix.ShellName) }, "/bin/true", execposix.ErrNoRunner, "no command runner configured"),
	)

	It("returns the runner's error with the partial result", func() {
		fake.Add(runner.Expectation{Argv: []string{"/bin/sleep", "60"}, Result: runner.Result{ExitCode: 137, Stdout: []byte("partial")}, Err: runner.ErrTimeout})
		res, err := provider(posixWith(fake)).Execute(ctx, newProps("/bin/sleep 60"), "/bin/sleep 60")
		Expect(err).To(MatchError(runner.ErrTimeout))
		Expect(res.Stdout).To(Equal([]byte("partial")))
	})

	DescribeTable("guards run the same way as the command",
		func(f func(runner.Runner) resources.Factory, guardArgv, cmdArgv []string) {
			fake.Add(runner.Expectation{Argv: guardArgv, Env: []string{"APP=1"}, Result: runner.Result{ExitCode: 1}})
			fake.Add(runner.Expectation{Argv: cmdArgv, Env: []string{"APP=1"}})
			p := newProps("setup-app", func(p *exectype.Properties) {
				p.Command = "/opt/app/setup --force"
				p.Unless = "/usr/bin/test -f '/opt/app/.done'"
				p.Environment = []string{"APP=1"}
				p.Cwd = "/opt/app"
			})
			out, err := exectype.Type{}.Apply(ctx, &resources.ApplyContext{}, p, provider(f(fake)))
			Expect(err).NotTo(HaveOccurred())
			Expect(out.Changed).To(BeTrue())
			Expect(out.State.(*protocol.ExecState).ExitCode).To(HaveValue(Equal(0)))
			for _, c := range fake.Calls() {
				Expect(c.Dir).To(Equal("/opt/app"))
			}
		},
		Entry("posix", posixWith,
			[]string{"/usr/bin/test", "-f", "/opt/app/.done"}, []string{"/opt/app/setup", "--force"}),
		Entry("shell", shellWith,
			[]string{"/bin/sh", "-c", "/usr/bin/test -f '/opt/app/.done'"}, []string{"/bin/sh", "-c", "/opt/app/setup --force"}),
	)
})

func posixWith(r runner.Runner) resources.Factory { return execposix.NewPosixFactory(r, nil) }
func shellWith(r runner.Runner) resources.Factory { return execposix.NewShellFactory(r, nil) }

// unbuilt is a factory whose providers lack a runner, as the zero provider
// values have.
type unbuilt string

func (u unbuilt) Type() string { return "exec" }
func (u unbuilt) Name() string { return string(u) }
func (u unbuilt) IsManageable(map[string]any, resources.Properties) (bool, int, error) {
	return true, 1, nil
}
func (u unbuilt) New() (resources.Provider, error) {
	if u == execposix.PosixName {
		return &execposix.Posix{}, nil
	}
	return &execposix.Shell{}, nil
}
