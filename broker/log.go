package broker

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/nats-io/nats-server/v2/server"
)

// Option customises a Broker beyond its Config.
type Option func(*Broker)

// WithLogger sets the logger for the broker's own messages and, when
// Config.ServerLog is set, for nats-server's log lines. Default: discard.
func WithLogger(log *slog.Logger) Option {
	return func(b *Broker) {
		if log != nil {
			b.log = log
		}
	}
}

// serverLog adapts nats-server's Logger to slog. It always remembers the
// first fatal line and the last error line so Start can explain a failed
// start, and forwards lines to slog only when forward is set.
type serverLog struct {
	log     *slog.Logger
	forward bool

	// guards fatal and last
	mu    sync.Mutex
	fatal string
	last  string
}

var _ server.Logger = (*serverLog)(nil)

func newServerLog(log *slog.Logger, forward bool) *serverLog {
	return &serverLog{log: log.With("component", "nats-server"), forward: forward}
}

func (l *serverLog) emit(level slog.Level, format string, v []any) {
	if !l.forward {
		return
	}
	l.log.Log(context.Background(), level, fmt.Sprintf(format, v...))
}

func (l *serverLog) remember(fatal bool, format string, v []any) {
	msg := fmt.Sprintf(format, v...)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last = msg
	if fatal && l.fatal == "" {
		l.fatal = msg
	}
}

// lastError returns the last fatal or error line, or "".
func (l *serverLog) lastError() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

// fatalError returns the first fatal line, or "".
func (l *serverLog) fatalError() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fatal
}

// Noticef logs a notice at Info.
func (l *serverLog) Noticef(format string, v ...any) { l.emit(slog.LevelInfo, format, v) }

// Warnf logs a warning at Warn.
func (l *serverLog) Warnf(format string, v ...any) { l.emit(slog.LevelWarn, format, v) }

// Fatalf logs at Error; it never exits the process.
func (l *serverLog) Fatalf(format string, v ...any) {
	l.remember(true, format, v)
	l.emit(slog.LevelError, format, v)
}

// Errorf logs at Error.
func (l *serverLog) Errorf(format string, v ...any) {
	l.remember(false, format, v)
	l.emit(slog.LevelError, format, v)
}

// Debugf logs at Debug (only called when server debug is on, which it is not).
func (l *serverLog) Debugf(format string, v ...any) { l.emit(slog.LevelDebug, format, v) }

// Tracef logs at Debug (only called when server tracing is on, which it is not).
func (l *serverLog) Tracef(format string, v ...any) { l.emit(slog.LevelDebug, format, v) }
