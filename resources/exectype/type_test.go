package exectype_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/exectype"
	"github.com/ccm-fleet/ccm/resources/redact"
)

const (
	cmd    = "/usr/bin/reload-app"
	onlyIf = "/usr/bin/test -d /opt/app"
	unless = "/usr/bin/test -f /opt/app/.done"
)

// row is one line of the exec decision table.
type row struct {
	refresh       bool
	creates       bool // creates is set and the file exists
	createsUnmet  bool // creates is set and the file is missing
	refreshOnly   bool
	onlyIfExit    *int // nil: no onlyif
	unlessExit    *int // nil: no unless
	wantRun       bool
	wantGuards    []string
	wantRefreshed bool
	wantNoopMsg   string
}

func exit(code int) *int { return &code }

func (r row) setup() (*exectype.Properties, *fakeProvider) {
	f := newFake()
	p := &exectype.Properties{CommonProperties: resources.CommonProperties{Name: "reload-app"}, Command: cmd, RefreshOnly: r.refreshOnly}
	if r.creates || r.createsUnmet {
		p.Creates = "/opt/app/bin/app"
		f.creates = r.creates
	}
	if r.onlyIfExit != nil {
		p.OnlyIf = onlyIf
		f.exits(onlyIf, *r.onlyIfExit)
	}
	if r.unlessExit != nil {
		p.Unless = unless
		f.exits(unless, *r.unlessExit)
	}
	Expect(p.Validate()).To(Succeed())
	return p, f
}

var _ = Describe("Type", func() {
	var ctx context.Context

	BeforeEach(func() { ctx = context.Background() })

	apply := func(p *exectype.Properties, f resources.Provider, ac *resources.ApplyContext) (*resources.Outcome, error) {
		return exectype.Type{}.Apply(ctx, ac, p, f)
	}

	It("is the exec type, present by default", func() {
		Expect(exectype.Type{}.Name()).To(Equal("exec"))
		Expect(exectype.Type{}.DefaultEnsure()).To(Equal("present"))
		Expect(exectype.Type{}.NewProperties()).To(BeAssignableToTypeOf(&exectype.Properties{}))
	})

	// A subscribe trigger runs the command whatever else holds; else an
	// existing creates file, or refreshonly without a trigger, skips it
	// without running guards; else onlyif (exit 0 to run) then unless
	// (exit 0 to skip) decide, the first to skip ending the checks.
	DescribeTable("decision table",
		func(r row) {
			By("applying for real")
			p, f := r.setup()
			out, err := apply(p, f, &resources.ApplyContext{Refresh: r.refresh})
			Expect(err).NotTo(HaveOccurred())
			want := append([]string{}, r.wantGuards...)
			if r.wantRun {
				want = append(want, cmd)
			}
			Expect(f.ran()).To(Equal(want))
			Expect(out.Changed).To(Equal(r.wantRun))
			Expect(out.Refreshed).To(Equal(r.wantRefreshed))
			Expect(out.NoopMessage).To(BeEmpty())
			st := out.State.(*protocol.ExecState)
			Expect(st.Ensure).To(Equal("present"))
			if r.wantRun {
				Expect(st.ExitCode).To(HaveValue(Equal(0)))
			} else {
				Expect(st.ExitCode).To(BeNil())
			}

			By("applying under noop: guards run, the command does not")
			p, f = r.setup()
			out, err = apply(p, f, &resources.ApplyContext{Refresh: r.refresh, Noop: true})
			Expect(err).NotTo(HaveOccurred())
			Expect(f.ran()).To(Equal(append([]string{}, r.wantGuards...)))
			Expect(out.Changed).To(Equal(r.wantRun))
			Expect(out.Refreshed).To(Equal(r.wantRefreshed))
			Expect(out.NoopMessage).To(Equal(r.wantNoopMsg))
			Expect(out.State.(*protocol.ExecState).ExitCode).To(BeNil())
		},
		Entry("subscribe triggered: execute", row{refresh: true,
			wantRun: true, wantRefreshed: true, wantNoopMsg: "Would have executed via subscribe"}),
		Entry("subscribe triggered and creates file exists: execute (subscribe takes precedence)", row{refresh: true, creates: true,
			wantRun: true, wantRefreshed: true, wantNoopMsg: "Would have executed via subscribe"}),
		Entry("subscribe triggered with refreshonly: execute", row{refresh: true, refreshOnly: true,
			wantRun: true, wantRefreshed: true, wantNoopMsg: "Would have executed via subscribe"}),
		Entry("subscribe triggered: guards are not consulted", row{refresh: true, onlyIfExit: exit(1), unlessExit: exit(0),
			wantRun: true, wantRefreshed: true, wantNoopMsg: "Would have executed via subscribe"}),
		Entry("creates file exists: skip", row{creates: true}),
		Entry("creates file exists: skip without running guards", row{creates: true, onlyIfExit: exit(0)}),
		Entry("refreshonly true and no trigger: skip", row{refreshOnly: true}),
		Entry("refreshonly true and no trigger: skip without running guards", row{refreshOnly: true, unlessExit: exit(1)}),
		Entry("refreshonly false and no creates: execute", row{
			wantRun: true, wantNoopMsg: "Would have executed"}),
		Entry("creates file missing: execute", row{createsUnmet: true,
			wantRun: true, wantNoopMsg: "Would have executed"}),
		Entry("onlyif exits 0: execute", row{onlyIfExit: exit(0),
			wantGuards: []string{onlyIf}, wantRun: true, wantNoopMsg: "Would have executed"}),
		Entry("onlyif exits non-zero: skip", row{onlyIfExit: exit(1),
			wantGuards: []string{onlyIf}}),
		Entry("unless exits 0: skip", row{unlessExit: exit(0),
			wantGuards: []string{unless}}),
		Entry("unless exits non-zero: execute", row{unlessExit: exit(1),
			wantGuards: []string{unless}, wantRun: true, wantNoopMsg: "Would have executed"}),
		Entry("onlyif exits 0 and unless exits 0: skip", row{onlyIfExit: exit(0), unlessExit: exit(0),
			wantGuards: []string{onlyIf, unless}}),
		Entry("onlyif exits non-zero: unless is not run", row{onlyIfExit: exit(2), unlessExit: exit(1),
			wantGuards: []string{onlyIf}}),
		Entry("onlyif exits 0 and unless exits non-zero: execute", row{onlyIfExit: exit(0), unlessExit: exit(1),
			wantGuards: []string{onlyIf, unless}, wantRun: true, wantNoopMsg: "Would have executed"}),
	)

	Describe("exit code validation", func() {
		It("fails with ErrDesiredStateFailed naming the code, the returns and stderr", func() {
			p, f := row{}.setup()
			f.results[cmd] = &exectype.Result{ExitCode: 3, Stderr: []byte("\nreload failed: no config\nsecond\n")}
			out, err := apply(p, f, &resources.ApplyContext{})
			Expect(err).To(MatchError(resources.ErrDesiredStateFailed))
			Expect(err.Error()).To(Equal("exec reload-app: desired state not achieved: exit code 3 is not one of [0]: reload failed: no config | second"))
			Expect(out.Changed).To(BeTrue())
			Expect(out.State.(*protocol.ExecState).ExitCode).To(HaveValue(Equal(3)))
		})

		It("carries the output apart from the message, so a sensitive command's renders without it", func() {
			p, f := row{}.setup()
			f.results[cmd] = &exectype.Result{ExitCode: 3, Stderr: []byte("token CANARY-exit-1\n")}
			_, err := apply(p, f, &resources.ApplyContext{})
			var exitErr *exectype.ExitError
			Expect(errors.As(err, &exitErr)).To(BeTrue())
			Expect(exitErr.Code).To(Equal(3))
			Expect(exitErr.Output).To(Equal("token CANARY-exit-1"))
			sealed := redact.Error(err, redact.Sensitively("exec#reload-app"))
			Expect(sealed.Error()).To(Equal("exec reload-app: desired state not achieved: exit code 3 is not one of [0]: [redacted]"))
			Expect(sealed).To(MatchError(resources.ErrDesiredStateFailed))
			Expect(redact.Error(err, redact.New("exec#reload-app", false)).Error()).To(ContainSubstring("CANARY-exit-1"))
		})

		It("quotes stdout when stderr is empty", func() {
			p, f := row{}.setup()
			f.results[cmd] = &exectype.Result{ExitCode: 1, Stdout: []byte("usage: reload-app\n")}
			_, err := apply(p, f, &resources.ApplyContext{})
			Expect(err).To(MatchError(HaveSuffix("exit code 1 is not one of [0]: usage: reload-app")))
		})

		It("quotes at most three lines and 512 bytes of output", func() {
			p, f := row{}.setup()
			f.results[cmd] = &exectype.Result{ExitCode: 1, Stderr: []byte(lines(10))}
			_, err := apply(p, f, &resources.ApplyContext{})
			Expect(err).To(MatchError(HaveSuffix("line 1 | line 2 | line 3")))

			p, f = row{}.setup()
			f.results[cmd] = &exectype.Result{ExitCode: 1, Stderr: []byte(strings.Repeat("é", 4000))}
			_, err = apply(p, f, &resources.ApplyContext{})
			msg := err.Error()
			snippet := msg[strings.Index(msg, "[0]: ")+5:]
			Expect(len(snippet)).To(BeNumerically("<=", 512))
			Expect(snippet).To(Equal(strings.Repeat("é", 256)))
		})

		It("accepts any code listed in returns", func() {
			p, f := row{}.setup()
			p.Returns = []int{0, 1, 2}
			f.exits(cmd, 2)
			out, err := apply(p, f, &resources.ApplyContext{})
			Expect(err).NotTo(HaveOccurred())
			Expect(out.Changed).To(BeTrue())
			Expect(out.State.(*protocol.ExecState).ExitCode).To(HaveValue(Equal(2)))
		})

		It("reads creates_satisfied again after running", func() {
			p, f := row{createsUnmet: true}.setup()
			f.createOnRun = cmd
			out, err := apply(p, f, &resources.ApplyContext{})
			Expect(err).NotTo(HaveOccurred())
			Expect(out.State.(*protocol.ExecState).CreatesSatisfied).To(BeTrue())
		})
	})

	Describe("output", func() {
		It("keeps the output in the state and logs it only with logoutput", func() {
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))

			p, f := row{}.setup()
			f.results[cmd] = &exectype.Result{Stdout: []byte("reloaded\nall good\n"), Stderr: []byte("warning: old config\n")}
			out, err := apply(p, f, &resources.ApplyContext{Log: log})
			Expect(err).NotTo(HaveOccurred())
			Expect(out.State.(*protocol.ExecState).Metadata.Output).To(BeEmpty())
			Expect(logs.String()).NotTo(ContainSubstring("all good"))

			p.LogOutput = true
			out, err = apply(p, f, &resources.ApplyContext{Log: log})
			Expect(err).NotTo(HaveOccurred())
			Expect(out.State.(*protocol.ExecState).Metadata.Output).To(Equal("reloaded\nall good\nwarning: old config\n"))
			Expect(logs.String()).To(MatchRegexp(`msg=reloaded .*stream=stdout`))
			Expect(logs.String()).To(MatchRegexp(`msg="all good" .*stream=stdout`))
			Expect(logs.String()).To(MatchRegexp(`msg="warning: old config" .*stream=stderr`))
		})

		It("bounds the stored output to MaxOutput bytes", func() {
			p, f := row{}.setup()
			p.LogOutput = true
			f.results[cmd] = &exectype.Result{Stdout: bytes.Repeat([]byte("a"), exectype.MaxOutput), Stderr: []byte("more")}
			out, err := apply(p, f, &resources.ApplyContext{})
			Expect(err).NotTo(HaveOccurred())
			Expect(out.State.(*protocol.ExecState).Metadata.Output).To(HaveLen(exectype.MaxOutput))
		})
	})

	Describe("failures", func() {
		It("fails, wrapping the provider's error, when the command cannot run", func() {
			p, f := row{}.setup()
			f.errs[cmd] = errBoom
			out, err := apply(p, f, &resources.ApplyContext{})
			Expect(err).To(MatchError(resources.ErrDesiredStateFailed))
			Expect(err).To(MatchError(errBoom))
			Expect(out.Changed).To(BeFalse())
		})

		It("counts a command that started but did not finish as changed", func() {
			p, f := row{}.setup()
			f.errs[cmd] = errBoom
			f.results[cmd] = &exectype.Result{ExitCode: 137}
			out, err := apply(p, f, &resources.ApplyContext{Refresh: true})
			Expect(err).To(MatchError(errBoom))
			Expect(out.Changed).To(BeTrue())
			Expect(out.Refreshed).To(BeTrue())
		})

		It("fails without running the command when a guard cannot run", func() {
			p, f := row{onlyIfExit: exit(0)}.setup()
			f.errs[onlyIf] = errBoom
			_, err := apply(p, f, &resources.ApplyContext{Noop: true})
			Expect(err).To(MatchError(errBoom))
			Expect(err).To(MatchError(ContainSubstring("exec reload-app: onlyif guard: boom")))
			Expect(f.ran()).To(Equal([]string{onlyIf}))
		})

		It("fails when Status fails", func() {
			p, f := row{}.setup()
			f.statusErr = errBoom
			_, err := apply(p, f, &resources.ApplyContext{})
			Expect(err).To(MatchError(errBoom))
			Expect(f.ran()).To(BeEmpty())
		})

		It("runs nothing when ctx is done", func() {
			p, f := row{}.setup()
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			_, err := exectype.Type{}.Apply(cctx, &resources.ApplyContext{}, p, f)
			Expect(err).To(MatchError(context.Canceled))
			Expect(f.ran()).To(BeEmpty())
		})

		It("rejects a provider that is not an exec provider", func() {
			p, _ := row{}.setup()
			_, err := apply(p, notExec{}, &resources.ApplyContext{})
			Expect(err).To(MatchError(exectype.ErrNotExecProvider))
			Expect(err).To(MatchError(ContainSubstring("does not implement exectype.Provider")))
		})

		It("rejects properties of another type", func() {
			_, err := exectype.Type{}.Apply(ctx, &resources.ApplyContext{}, &otherProps{}, newFake())
			Expect(err).To(MatchError(exectype.ErrNotExecProvider))
		})
	})
})

type otherProps struct{ resources.CommonProperties }

func (*otherProps) Validate() error { return nil }
