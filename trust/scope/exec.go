package scope

import (
	"fmt"
	"strings"

	"github.com/kballard/go-shellquote"

	"github.com/ccm-fleet/ccm/resources/catalog"
)

// execSet reports whether any exec rule is set, allow or deny.
func (s *Scope) execSet() bool {
	return s.allow.hasExec || len(s.deny.cmds) > 0 || len(s.deny.env) > 0 || len(s.deny.cwd) > 0 || len(s.deny.path) > 0
}

// command judges one command line. post says it is a scaffold post
// command: "{}" (or, without one, an appended last argument) stands for a
// rendered file, a value only a wildcard matches. A deny pattern matching
// it refuses it; else, with commands allowed, the first allow pattern
// that matches without a wildcard problem allows it, and none is a
// refusal (default deny).
func (s *Scope) command(r Resolver, check, line, provider, searchPath string, post bool) Decision {
	d := Decision{Check: check, Value: line, Rule: "exec.commands"}
	argv, why := commandArgv(r, line, provider)
	if why != "" {
		d.Reason = why
		return d
	}
	if provider == "shell" {
		// Judged as what runs: the shell, given the line.
		d.Value = shellquote.Join(argv...)
	}
	args := judgedArgs(argv[1:], post)
	cmd, err := r.command(argv[0], searchPath)
	if err != nil {
		d.Reason = err.Error()
		return d
	}
	if cmd.target != argv[0] {
		d.Value += fmt.Sprintf(" (runs %s)", cmd.target)
	}
	if q, ok := s.denyingPattern(r, cmd, args); ok {
		d.Rule = fmt.Sprintf("%s %q", q.rule, q.raw)
		return d
	}
	if !s.allow.hasExec {
		d.Allowed, d.Rule = true, "exec.commands (not set: any command)"
		return d
	}
	s.allowCommand(&d, r, cmd, args)
	return d
}

// commandArgv is the argv a provider runs for a command line: its words
// for posix, the shell with -c and the line for shell. For a line that
// cannot be judged it gives the reason instead.
func commandArgv(r Resolver, line, provider string) (argv []string, reason string) {
	switch provider {
	case "", "posix":
		words, err := shellquote.Split(line)
		if err != nil || len(words) == 0 {
			return nil, "the command line does not split into words"
		}
		return words, ""
	case "shell":
		sh := r.Shell
		if sh == "" {
			sh = DefaultShell
		}
		return []string{sh, "-c", line}, ""
	default:
		return nil, fmt.Sprintf("commands run by the %s provider cannot be judged (only posix and shell)", provider)
	}
}

// judgedArgs are a command's arguments as judged: for a post command, an
// argument holding "{}" is unknown until it runs, and without one an
// unknown last argument (the rendered file) is appended.
func judgedArgs(argv []string, post bool) []word {
	args := make([]word, 0, len(argv))
	placeholder := false
	for _, a := range argv {
		if post && strings.Contains(a, "{}") {
			args, placeholder = append(args, word{text: a, unknown: true}), true
			continue
		}
		args = append(args, word{text: a})
	}
	if post && !placeholder {
		args = append(args, word{text: "{}", unknown: true})
	}
	return args
}

// denyingPattern is the first deny pattern whose executable is cmd's
// (the same target, or invoked by the same name) and whose arguments
// match args.
func (s *Scope) denyingPattern(r Resolver, cmd resolvedCommand, args []word) (pattern, bool) {
	for _, q := range s.deny.cmds {
		pr := r.pattern(q.words[0])
		if pr.target != cmd.target && pr.invoked != cmd.invoked {
			continue
		}
		if ok, _ := q.matchArgs(args); ok {
			return q, true
		}
	}
	return pattern{}, false
}

// allowCommand decides d by the allow patterns: one for cmd's target,
// invoked by the same name, whose arguments match args allows it, unless
// its wildcards matched what a command of cmd's kind must spell out; the
// first such problem is the reason when no pattern allows it.
func (s *Scope) allowCommand(d *Decision, r Resolver, cmd resolvedCommand, args []word) {
	k := kindOf(cmd.invoked, cmd.target)
	for _, p := range s.allow.cmds {
		// The name a pattern starts its executable by is its last word as
		// written: no need to resolve patterns of other names.
		if baseName(p.words[0]) != baseName(cmd.invoked) {
			continue
		}
		pr := r.pattern(p.words[0])
		if pr.target != cmd.target || baseName(pr.invoked) != baseName(cmd.invoked) {
			continue
		}
		ok, wild := p.matchArgs(args)
		if !ok {
			continue
		}
		if why := wildcardProblem(k, args, wild); why != "" {
			if d.Reason == "" {
				d.Rule, d.Reason = fmt.Sprintf("%s %q", p.rule, p.raw), why
			}
			continue
		}
		d.Allowed, d.Rule, d.Reason = true, fmt.Sprintf("%s %q", p.rule, p.raw), ""
		return
	}
	if d.Reason == "" {
		d.Rule = "exec.commands (no pattern matches: default deny)"
	}
}

// wildcardProblem says why a pattern whose wildcards matched the
// arguments marked in wild does not allow a command of kind k.
func wildcardProblem(k kind, args []word, wild []bool) string {
	for i, w := range wild {
		if !w {
			continue
		}
		switch {
		case k == shell:
			return fmt.Sprintf("a shell, or a command that runs other commands, is allowed only by a pattern that spells out every argument (a wildcard matched %q)", args[i].text)
		case k == interpreter && interpreterOption(args, i):
			return fmt.Sprintf("an interpreter's own options are allowed only when the pattern spells them out (a wildcard matched %q)", args[i].text)
		}
	}
	return ""
}

func baseName(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

// execValue judges one of an exec's environment entries, its cwd or its
// search path.
func (s *Scope) execValue(r Resolver, o catalog.HostObject) Decision {
	d := Decision{Check: o.Check, Value: o.Value}
	switch o.Kind {
	case catalog.Environment:
		judge(&d, s.allow.hasExec, "exec.environment", s.allow.env, s.deny.env, func(e entry) bool { return globMatch(e.value, o.Value) })
	case catalog.WorkingDir:
		cwd, err := r.resolve(o.Value, true)
		if err != nil {
			d.Rule, d.Reason = "exec.cwd", err.Error()
			return d
		}
		judge(&d, s.allow.hasExec, "exec.cwd", s.allow.cwd, s.deny.cwd, func(e entry) bool {
			rc, err := r.resolve(e.value, true)
			return e.value == cwd || e.value == o.Value || (err == nil && rc == cwd)
		})
	case catalog.SearchPath:
		clean, err := checkSearchPath(o.Value)
		if err != nil {
			clean = o.Value
		}
		judge(&d, s.allow.hasExec, "exec.path", s.allow.path, s.deny.path, func(e entry) bool { return e.value == clean })
	}
	return d
}
