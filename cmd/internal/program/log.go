package program

import (
	"io"
	"log/slog"
)

// LogFormats are the values of --log-format.
var LogFormats = []string{"text", "json"}

// LogLevels are the values of --log-level.
var LogLevels = []string{"debug", "info", "warn", "error"}

// quiet is above every level: nothing is logged.
const quiet = slog.LevelError + 4

// Logger logs to stderr at the level the global flags ask for (--log-level,
// else debug with --debug, info with -v); without them it logs nothing, as
// commands report through their output.
func (g *Globals) Logger() *slog.Logger {
	level := quiet
	switch {
	case g.Debug:
		level = slog.LevelDebug
	case g.Verbose:
		level = slog.LevelInfo
	}
	if g.LogLevel != "" {
		level = ParseLevel(g.LogLevel)
	}
	return NewLogger(g.Stderr, g.LogFormat, level)
}

// DaemonLogger is the logger of long-running commands: on stderr in the
// format and at the level of the global flags, else of format and level
// (e.g. from a configuration file; empty is text and info); --debug lowers
// a level not given by flag to debug.
func (g *Globals) DaemonLogger(format, level string) *slog.Logger {
	if g.LogFormat != "" {
		format = g.LogFormat
	}
	lvl := ParseLevel(level)
	switch {
	case g.LogLevel != "":
		lvl = ParseLevel(g.LogLevel)
	case g.Debug:
		lvl = slog.LevelDebug
	}
	return NewLogger(g.Stderr, format, lvl)
}

// NewLogger logs to w at level and above, as JSON objects when format is
// "json" and as slog's key=value text otherwise. An attribute whose value
// is an empty string is left out: a line has no "key":"" field.
func NewLogger(w io.Writer, format string, level slog.Level) *slog.Logger {
	o := &slog.HandlerOptions{Level: level, ReplaceAttr: dropEmpty}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, o))
	}
	return slog.New(slog.NewTextHandler(w, o))
}

// ParseLevel is one of LogLevels as a slog.Level; anything else (empty
// included) is info.
func ParseLevel(s string) slog.Level {
	switch s {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// dropEmpty leaves out an attribute whose value is an empty string (the
// message, whatever it is, stays).
func dropEmpty(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.MessageKey {
		return a
	}
	if a.Value.Kind() == slog.KindString && a.Value.String() == "" {
		return slog.Attr{}
	}
	return a
}
