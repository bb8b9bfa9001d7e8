package redact

import (
	"context"
	"log/slog"
)

// Logger returns l writing through a handler that redacts, for the
// resource with secrets s, every record: error values render as Error
// does, strings (and the message) holding a secret value are withheld.
// With an inactive s it returns l.
func Logger(l *slog.Logger, s *Secrets) *slog.Logger {
	if l == nil || !s.Active() {
		return l
	}
	return slog.New(&handler{next: l.Handler(), s: s})
}

// handler is the slog.Handler of Logger.
type handler struct {
	next slog.Handler
	s    *Secrets
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	msg := r.Message
	if h.s.Holds(msg) {
		msg = Marker
	}
	out := slog.NewRecord(r.Time, r.Level, msg, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = h.attr(a)
	}
	return &handler{next: h.next.WithAttrs(red), s: h.s}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{next: h.next.WithGroup(name), s: h.s}
}

// attr redacts one attribute, groups included.
func (h *handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindGroup:
		g := v.Group()
		red := make([]any, len(g))
		for i, x := range g {
			red[i] = h.attr(x)
		}
		return slog.Group(a.Key, red...)
	case slog.KindString:
		return slog.String(a.Key, h.s.Value("", v.String()))
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, Message(err, h.s))
		}
		if str, ok := v.Any().(interface{ String() string }); ok {
			return slog.String(a.Key, h.s.Value("", str.String()))
		}
		if h.s.Holds(v.String()) {
			return slog.String(a.Key, Marker)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
