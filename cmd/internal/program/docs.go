package program

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/choria-io/fisk"
)

// Shells are the shells the completion command writes scripts for.
var Shells = []string{"bash", "zsh", "fish"}

// registerDocs adds the completion command (a shell's completion script on
// stdout) and the hidden man command (the program's manual page in roff,
// made from the commands and flags the program really has); the packages
// install both, generated at build time.
func registerDocs(app *fisk.Application, b Build, g *Globals) {
	var shell string
	completion := app.Command("completion", "Print the shell completion script for bash, zsh or fish (the ccm-fleet package installs them)").
		Action(func(pc *fisk.ParseContext) error {
			return writeCompletion(app, pc, shell, g.Stdout)
		})
	completion.Arg("shell", "bash, zsh or fish").Required().EnumVar(&shell, Shells...)

	app.Command("man", "Print the manual page in roff (man(1) format)").Hidden().
		Action(func(*fisk.ParseContext) error {
			return WriteManPage(g.Stdout, app.Model(), b)
		})
}

// writeCompletion writes shell's completion script for app to w. The bash
// and zsh scripts are fisk's; the fish script asks the program for its
// completions the way the bash script does (--completion-bash).
func writeCompletion(app *fisk.Application, pc *fisk.ParseContext, shell string, w io.Writer) error {
	var tmpl string
	switch shell {
	case "bash":
		tmpl = fisk.BashCompletionTemplate
	case "zsh":
		tmpl = fisk.ZshCompletionTemplate
	case "fish":
		_, err := io.WriteString(w, fishCompletion(app.Name))
		return err
	default:
		return fmt.Errorf("completion: unknown shell %q (one of %s)", shell, strings.Join(Shells, ", "))
	}
	// fisk writes usage templates to the application's usage writer.
	app.UsageWriter(w)
	return app.UsageForContextWithTemplate(pc, 2, tmpl)
}

// fishCompletion is the fish completion script for the program name.
func fishCompletion(name string) string {
	fn := "__" + strings.NewReplacer("-", "_", ".", "_").Replace(name) + "_complete"
	return fmt.Sprintf(`# fish completion for %[1]s (%[1]s completion fish)
function %[2]s
    set -l words (commandline -opc)
    set -e words[1]
    %[1]s --completion-bash $words (commandline -ct) 2>/dev/null
end
complete -c %[1]s -f -a '(%[2]s)'
`, name, fn)
}

// WriteManPage writes the manual page (section 1) of the application
// model m, stamped with the build's version and date, to w.
func WriteManPage(w io.Writer, m *fisk.ApplicationModel, b Build) error {
	bw := bufio.NewWriter(w)
	date := "unknown"
	if t, err := time.Parse(time.RFC3339, b.Date); err == nil {
		date = t.UTC().Format("2006-01-02")
	}
	fmt.Fprintf(bw, ".TH %s 1 %s %s %s\n", roffQuote(strings.ToUpper(m.Name)), roffQuote(date),
		roffQuote("ccm-fleet "+orUnknown(b.Version)), roffQuote("CCM Fleet Manual"))
	fmt.Fprintf(bw, ".SH NAME\n%s \\- %s\n", roffEscape(m.Name), roffEscape(firstSentence(m.Help)))
	fmt.Fprintf(bw, ".SH SYNOPSIS\n.B %s\n%s\n", roffEscape(m.Name), roffEscape(usage(m.FlagGroupModel, m.ArgGroupModel, m.CmdGroupModel)))
	fmt.Fprintf(bw, ".SH DESCRIPTION\n%s\n", roffText(m.Help))
	fmt.Fprintf(bw, ".SH OPTIONS\n")
	writeFlags(bw, m.Flags)
	if cmds := visibleCommands(m.CmdGroupModel); len(cmds) > 0 {
		fmt.Fprintf(bw, ".SH COMMANDS\n")
		for _, c := range cmds {
			fmt.Fprintf(bw, ".SS %s\n", roffQuote(strings.TrimSpace(c.FullCommand+" "+usage(c.FlagGroupModel, c.ArgGroupModel, nil))))
			fmt.Fprintf(bw, "%s\n", roffText(c.Help))
			if c.HelpLong != "" {
				fmt.Fprintf(bw, ".PP\n%s\n", roffText(c.HelpLong))
			}
			for _, a := range c.Args {
				if a.Hidden {
					continue
				}
				fmt.Fprintf(bw, ".TP\n.I %s\n%s\n", roffQuote(argName(a)), roffText(a.HelpWithEnvar()))
			}
			writeFlags(bw, c.Flags)
		}
	}
	fmt.Fprintf(bw, ".SH SEE ALSO\n")
	var see []string
	for _, n := range []string{"ccm-agent", "ccm-orch", "ccm-broker"} {
		if n != m.Name {
			see = append(see, fmt.Sprintf(".BR %s (1)", n))
		}
	}
	fmt.Fprintf(bw, "%s\n.PP\nhttps://github.com/ccm-fleet/ccm\n", strings.Join(see, ",\n"))
	return bw.Flush()
}

// visibleCommands lists every command that runs something, depth first,
// leaving out hidden ones and those below a hidden one.
func visibleCommands(g *fisk.CmdGroupModel) []*fisk.CmdModel {
	var out []*fisk.CmdModel
	if g == nil {
		return nil
	}
	for _, c := range g.Commands {
		if c.Hidden {
			continue
		}
		if len(c.Commands) == 0 {
			out = append(out, c)
		}
		out = append(out, visibleCommands(c.CmdGroupModel)...)
	}
	return out
}

// writeFlags writes the visible flags as a tagged list.
func writeFlags(w io.Writer, flags []*fisk.FlagModel) {
	for _, f := range flags {
		if f.Hidden {
			continue
		}
		tag := "--" + f.Name
		if f.Short != 0 {
			tag = "-" + string(f.Short) + ", " + tag
		}
		if !f.IsBoolFlag() {
			tag += "=" + f.FormatPlaceHolder()
		}
		fmt.Fprintf(w, ".TP\n.B %s\n%s\n", roffQuote(tag), roffText(f.HelpWithEnvar()))
	}
}

// usage is a command's flag and argument summary, as --help shows it.
func usage(flags *fisk.FlagGroupModel, args *fisk.ArgGroupModel, cmds *fisk.CmdGroupModel) string {
	var parts []string
	if flags != nil {
		if s := flags.FlagSummary(); s != "" {
			parts = append(parts, s)
		}
	}
	if args != nil && len(args.Args) > 0 { // fisk's ArgSummary fails on none
		if s := args.ArgSummary(); s != "" {
			parts = append(parts, s)
		}
	}
	if cmds != nil && len(cmds.Commands) > 0 {
		parts = append(parts, "<command> [<args> ...]")
	}
	return strings.Join(parts, " ")
}

func argName(a *fisk.ArgModel) string {
	if a.PlaceHolder != "" {
		return a.PlaceHolder
	}
	return "<" + a.Name + ">"
}

// firstSentence is s up to its first ": " or ". ", for the NAME line.
func firstSentence(s string) string {
	s = strings.TrimSpace(s)
	for _, sep := range []string{": ", ". "} {
		if i := strings.Index(s, sep); i > 0 {
			s = s[:i]
		}
	}
	return strings.TrimSuffix(s, ".")
}

// roffEscape escapes text for one line of roff: backslashes, and a leading
// dot or quote that would make it a request.
func roffEscape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// helpListItem is a line of a list in help text, as --help lays it out:
// indented, a tag, two or more spaces, its text (`  4    no host matched`).
var helpListItem = regexp.MustCompile(`^\s+(\S+)\s{2,}(\S.*)$`)

// roffText escapes a paragraph of help for roff: each line as roffEscape
// does, and blank lines as paragraph breaks. A list laid out for --help
// (see helpListItem; more indented lines continue an item) becomes one
// tagged paragraph (.TP) an item, which man fills and wraps on its own,
// instead of lines run together into one paragraph.
func roffText(s string) string {
	var buf bytes.Buffer
	inList := false
	for i, line := range strings.Split(strings.TrimSpace(s), "\n") {
		if i > 0 {
			buf.WriteByte('\n')
		}
		indented := strings.TrimLeft(line, " \t") != line
		switch m := helpListItem.FindStringSubmatch(line); {
		case strings.TrimSpace(line) == "":
			buf.WriteString(".PP")
			inList = false
		case m != nil && (inList || !strings.HasPrefix(strings.TrimSpace(line), "-")):
			buf.WriteString(".TP\n" + roffEscape(m[1]) + "\n" + roffEscape(m[2]))
			inList = true
		case inList && indented:
			buf.WriteString(roffEscape(strings.TrimSpace(line)))
		case inList:
			buf.WriteString(".PP\n" + roffEscape(line))
			inList = false
		default:
			buf.WriteString(roffEscape(line))
		}
	}
	return buf.String()
}

// roffQuote is s as one quoted roff macro argument.
func roffQuote(s string) string {
	return `"` + strings.ReplaceAll(roffEscape(s), `"`, `\(dq`) + `"`
}
