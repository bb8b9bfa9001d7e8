package main

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/cmd/internal/program"
	"github.com/ccm-fleet/ccm/cmd/internal/resflags"
	"github.com/ccm-fleet/ccm/protocol"
)

// A session, as in CCM, is a directory holding the transaction event of
// every "ensure" run with --session DIR (or CCM_SESSION_STORE), one
// <event id>.event file each, so that separate command lines can --require
// an earlier resource's success and --subscribe to its changes.
const (
	sessionEnv       = "CCM_SESSION_STORE"
	sessionEventExt  = ".event"
	maxSessionEvents = 10000
	maxSessionEvent  = 1 << 20
)

// ErrNoSessionEvents is returned when --require or --subscribe names a
// resource the session has no event of.
var ErrNoSessionEvents = errors.New("no events in the session")

// sessionFlags are the session flags of "ensure" and of one type.
type sessionFlags struct {
	dir       *string
	require   []string
	subscribe []string
}

// registerSessionStore adds --session to "ensure".
func registerSessionStore(ens *fisk.CmdClause) *string {
	return ens.Flag("session", "Session directory recording each resource's event, for --require and --subscribe across command lines (ccm-agent session new)").Envar(sessionEnv).PlaceHolder("DIR").String()
}

// register adds --require (every type) and --subscribe (the types the
// flag table says are refreshed, as in CCM) to one type's command.
func (s *sessionFlags) register(cmd *fisk.CmdClause, t resflags.TypeFlags) {
	cmd.Flag("require", "Skip this resource unless the session's last event of TYPE#NAME succeeded (repeatable; needs --session)").PlaceHolder("TYPE#NAME").StringsVar(&s.require)
	if t.Subscribe {
		cmd.Flag("subscribe", "Refresh this resource when the session's last event of TYPE#NAME changed it (repeatable; needs --session)").Short('S').PlaceHolder("TYPE#NAME").StringsVar(&s.subscribe)
	}
}

// session is an open session directory.
type session struct {
	dir    string
	events []*protocol.TransactionEvent
}

// open reads the session directory named by the flags; nil when none is
// named. --require and --subscribe without one are an error.
func (s *sessionFlags) open() (*session, error) {
	dir := ""
	if s.dir != nil {
		dir = *s.dir
	}
	if dir == "" {
		if len(s.require) > 0 || len(s.subscribe) > 0 {
			return nil, errors.New("--require and --subscribe need a session: --session DIR, CCM_SESSION_STORE, or eval \"$(ccm-agent session new)\"")
		}
		return nil, nil
	}
	for _, ref := range slices.Concat(s.require, s.subscribe) {
		if t, n, ok := strings.Cut(ref, "#"); !ok || t == "" || n == "" {
			return nil, fmt.Errorf("%q: a reference looks like TYPE#NAME", ref)
		}
	}
	events, err := readSession(dir)
	if err != nil {
		return nil, err
	}
	return &session{dir: dir, events: events}, nil
}

// readSession reads every event of a session directory, oldest first.
func readSession(dir string) ([]*protocol.TransactionEvent, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", dir, err)
	}
	var events []*protocol.TransactionEvent
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), sessionEventExt) {
			continue
		}
		if len(events) == maxSessionEvents {
			return nil, fmt.Errorf("session %s: more than %d events", dir, maxSessionEvents)
		}
		ev, err := readSessionEvent(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		events = append(events, ev)
	}
	slices.SortStableFunc(events, func(a, b *protocol.TransactionEvent) int { return a.Timestamp.Compare(b.Timestamp) })
	return events, nil
}

func readSessionEvent(path string) (*protocol.TransactionEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("session event %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSessionEvent+1))
	if err != nil {
		return nil, fmt.Errorf("session event %s: %w", path, err)
	}
	if len(b) > maxSessionEvent {
		return nil, fmt.Errorf("session event %s: larger than %d bytes", path, maxSessionEvent)
	}
	var ev protocol.TransactionEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		return nil, fmt.Errorf("session event %s: %w", path, err)
	}
	return &ev, nil
}

// last is the newest event of ref (TYPE#NAME, the name or the alias).
func (s *session) last(ref string) (*protocol.TransactionEvent, error) {
	typ, name, _ := strings.Cut(ref, "#")
	for i := len(s.events) - 1; i >= 0; i-- {
		ev := s.events[i]
		if ev.Type == typ && (ev.Name == name || (ev.Alias != "" && ev.Alias == name)) {
			return ev, nil
		}
	}
	return nil, fmt.Errorf("%s: %w %s", ref, ErrNoSessionEvents, s.dir)
}

// unmet returns the required refs whose last event failed or was skipped
// for its own unmet requirements; a ref with no event is an error, as in
// CCM.
func (s *session) unmet(require []string) ([]string, error) {
	var out []string
	for _, ref := range require {
		ev, err := s.last(ref)
		if err != nil {
			return nil, err
		}
		if ev.Failed || len(ev.UnmetRequirements) > 0 {
			out = append(out, ref)
		}
	}
	return out, nil
}

// changed returns the subscribed refs whose last event changed something.
func (s *session) changed(subscribe []string) ([]string, error) {
	var out []string
	for _, ref := range subscribe {
		ev, err := s.last(ref)
		if err != nil {
			return nil, err
		}
		if ev.Changed {
			out = append(out, ref)
		}
	}
	return out, nil
}

// record writes ev into the session directory.
func (s *session) record(ev *protocol.TransactionEvent) error {
	if _, err := hex.DecodeString(ev.EventID); err != nil || ev.EventID == "" {
		return fmt.Errorf("session %s: event id %q is not hexadecimal", s.dir, ev.EventID)
	}
	b, err := json.MarshalIndent(ev, "", "  ")
	if err != nil {
		return fmt.Errorf("session %s: %w", s.dir, err)
	}
	if err := os.WriteFile(filepath.Join(s.dir, ev.EventID+sessionEventExt), b, 0o600); err != nil {
		return fmt.Errorf("session %s: %w", s.dir, err)
	}
	return nil
}

func (a *app) registerSession(cli *fisk.Application) {
	sess := cli.Command("session", "Record resources of separate ensure command lines in one session, as CCM does")

	var dir string
	newCmd := sess.Command("new", "Create a session directory and print the export line for it: eval \"$(ccm-agent session new)\"").Alias("start").Alias("create")
	newCmd.Flag("directory", "Directory to create (default: a new one in the temporary directory)").PlaceHolder("DIR").StringVar(&dir)
	newCmd.Action(func(*fisk.ParseContext) error { return a.sessionNew(dir) })

	var (
		store  string
		remove bool
	)
	report := sess.Command("report", "Summarise the session's events")
	report.Flag("session", "Session directory").Envar(sessionEnv).PlaceHolder("DIR").StringVar(&store)
	report.Flag("remove", "Remove the session directory afterwards when it is inside the temporary directory").UnNegatableBoolVar(&remove)
	report.Action(func(*fisk.ParseContext) error { return a.sessionReport(store, remove) })
}

func (a *app) sessionNew(dir string) error {
	var err error
	if dir == "" {
		if dir, err = os.MkdirTemp("", "ccm-session-*"); err != nil {
			return program.Exit(protocol.ExitError, err)
		}
	} else if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return program.Exit(protocol.ExitError, fmt.Errorf("session store %s already exists", dir))
		}
		return program.Exit(protocol.ExitError, err)
	}
	fmt.Fprintf(a.Stdout, "export %s=%s\n", sessionEnv, dir)
	return nil
}

func (a *app) sessionReport(dir string, remove bool) error {
	if dir == "" {
		return program.Exit(protocol.ExitError, errors.New("no session store specified: --session DIR or CCM_SESSION_STORE"))
	}
	events, err := readSession(dir)
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	var took time.Duration
	for _, ev := range events {
		took += ev.Duration
	}
	newRunReport(events, took).writeSession(a.Stdout)
	if remove {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil
		}
		rel, err := filepath.Rel(os.TempDir(), abs)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			return nil
		}
		if err := os.RemoveAll(abs); err != nil {
			return program.Exit(protocol.ExitError, err)
		}
	}
	return nil
}
