package redact

import "errors"

// Redactable is an error that carries a secret in its own fields and can
// render its message without it. RedactedError returns the message Error
// would, with every secret part replaced by what s lets leave (s.Output,
// s.Value); it is called only with an active s.
type Redactable interface {
	error
	RedactedError(s *Secrets) string
}

// Error returns err as it may leave the host: err itself when s is
// inactive or err is nil, else an error whose message is built without the
// secrets (see Message) and that unwraps to err, so errors.Is and
// errors.As classify it as before. Whatever renders the returned error
// (a reply, a log line, a wrapping fmt.Errorf) renders it redacted.
func Error(err error, s *Secrets) error {
	if err == nil || !s.Active() {
		return err
	}
	return &sealedError{err: err, s: s, msg: Message(err, s)}
}

// Message renders err for a resource with secrets s: err.Error() when s is
// inactive. Else, when err is Redactable, its redacted rendering; when an
// error deeper in its chain is, the resource then that rendering (the
// outer words are not rebuilt from text); otherwise err's own message.
// A message that still holds a known secret value is withheld whole
// (s.Withheld).
func Message(err error, s *Secrets) string {
	if err == nil {
		return ""
	}
	if !s.Active() {
		return err.Error()
	}
	var msg string
	var r Redactable
	var sealed *sealedError
	switch {
	case errors.As(err, &sealed):
		// Rendered for the outside already; wrappers add only their words.
		msg = err.Error()
	case isRedactable(err, &r):
		msg = r.RedactedError(s)
	case errors.As(err, &r):
		msg = r.RedactedError(s)
		if s.Ref != "" {
			msg = s.Ref + ": " + msg
		}
	default:
		msg = err.Error()
	}
	if s.Holds(msg) {
		return s.Withheld()
	}
	return msg
}

func isRedactable(err error, r *Redactable) bool {
	v, ok := err.(Redactable)
	if ok {
		*r = v
	}
	return ok
}

// sealedError is an error already rendered for the outside.
type sealedError struct {
	err error
	s   *Secrets
	msg string
}

func (e *sealedError) Error() string { return e.msg }
func (e *sealedError) Unwrap() error { return e.err }
