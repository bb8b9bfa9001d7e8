package resources

import (
	"context"
	"log/slog"
)

// loggerKey carries the logger of the resource being applied.
type loggerKey struct{}

// WithLogger returns ctx carrying l, the logger of the resource being
// applied: the engine passes one that redacts the resource's secrets
// (package redact), so that what a provider logs passes the same
// redaction step as the resource's event.
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}

// Logger is the logger of the resource ctx applies (WithLogger), or
// fallback when ctx carries none (a provider used outside the engine).
// Providers log about a resource through it, never through a logger of
// their own that would skip redaction.
func Logger(ctx context.Context, fallback *slog.Logger) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok && l != nil {
		return l
	}
	return fallback
}
