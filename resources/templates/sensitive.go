package templates

import "strings"

// minSensitiveValue is the shortest sensitive data value looked for in
// expanded properties: shorter ones would match too much by chance.
const minSensitiveValue = 4

// WithSensitive marks data keys as sensitive: dotted paths below data
// ("db.password", or "secrets" for a whole object). A resource whose
// templates read one of them, or whose expanded properties contain one of
// their values, is sensitive (see Env.Sensitive).
func WithSensitive(keys []string) Option {
	return func(e *Env) {
		for _, k := range keys {
			k = strings.TrimPrefix(k, "data.")
			if k != "" {
				e.sensitive = append(e.sensitive, k)
			}
		}
	}
}

// SensitiveKeys returns the data keys marked sensitive.
func (e *Env) SensitiveKeys() []string { return e.sensitive }

// Sensitive reports whether a resource with the raw (unexpanded)
// properties raw, expanded to expanded, reads data marked sensitive. It
// errs on the side of hiding: a template is taken to read a sensitive key
// when it names the key's first segment as a word (data.db.user reads
// "db" when db.password is sensitive), or uses data as a whole; and the
// resource is sensitive when any expanded string contains the value (at
// least 4 bytes long) of a sensitive key, however it got there.
//
// A template that calls kvGet() makes the resource sensitive whatever was
// marked: key-value stores are where secrets are kept.
func (e *Env) Sensitive(raw, expanded any) bool {
	if e.kv != nil && templatesCall(raw, "kvGet") {
		return true
	}
	if len(e.sensitive) == 0 {
		return false
	}
	if e.templatesReadSensitive(raw) {
		return true
	}
	var values []string
	for _, k := range e.sensitive {
		if v, ok := Walk(e.data, k); ok {
			values = leafStrings(v, values)
		}
	}
	found := false
	eachString(expanded, func(s string) {
		for _, v := range values {
			if len(v) >= minSensitiveValue && strings.Contains(s, v) {
				found = true
			}
		}
	})
	return found
}

func (e *Env) templatesReadSensitive(raw any) bool {
	found := false
	eachString(raw, func(s string) {
		for _, t := range findTemplates(s) {
			if e.exprReadsSensitive(s[t.exprStart:t.exprEnd]) {
				found = true
			}
		}
	})
	return found
}

// templatesCall reports whether a template inside raw names fn as a word.
func templatesCall(raw any, fn string) bool {
	found := false
	eachString(raw, func(s string) {
		for _, t := range findTemplates(s) {
			for _, w := range wordsOf(s[t.exprStart:t.exprEnd]) {
				if w.text == fn {
					found = true
				}
			}
		}
	})
	return found
}

// exprReadsSensitive looks at the words of an expression.
func (e *Env) exprReadsSensitive(src string) bool {
	words := wordsOf(src)
	for _, w := range words {
		if (w.text == "data" || w.text == "Data") && (w.end >= len(src) || src[w.end] != '.' && src[w.end] != '[') {
			return true // data as a whole
		}
		for _, k := range e.sensitive {
			first, _, _ := strings.Cut(k, ".")
			if w.text == first {
				return true
			}
		}
	}
	return false
}

type word struct {
	text string
	end  int
}

// wordsOf splits src into runs of letters, digits and '_' / '-'.
func wordsOf(src string) []word {
	var out []word
	start := -1
	for i := 0; i <= len(src); i++ {
		if i < len(src) && isWordByte(src[i]) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = append(out, word{src[start:i], i})
			start = -1
		}
	}
	return out
}

func isWordByte(c byte) bool {
	return c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// eachString calls f with every string inside v.
func eachString(v any, f func(string)) {
	switch t := v.(type) {
	case string:
		f(t)
	case map[string]any:
		// Keys count: some properties (goss rules) are keyed by templates.
		for k, x := range t {
			f(k)
			eachString(x, f)
		}
	case []any:
		for _, x := range t {
			eachString(x, f)
		}
	}
}

// leafStrings appends the string forms of the scalars inside v.
func leafStrings(v any, out []string) []string {
	switch t := v.(type) {
	case map[string]any:
		for _, x := range t {
			out = leafStrings(x, out)
		}
	case []any:
		for _, x := range t {
			out = leafStrings(x, out)
		}
	case nil:
	default:
		out = append(out, stringify(t))
	}
	return out
}

// SensitiveValues returns the values of the data keys marked sensitive, as
// strings: what must never leave the host, whatever property holds it.
func (e *Env) SensitiveValues() []string {
	var values []string
	for _, k := range e.sensitive {
		if v, ok := Walk(e.data, k); ok {
			values = leafStrings(v, values)
		}
	}
	return values
}

// Templated returns the top-level keys of raw (a resource's properties as
// written) whose value holds a template anywhere, and the strings their
// expanded values hold: what templates put into the resource.
func Templated(raw, expanded map[string]any) (keys, values []string) {
	for k, v := range raw {
		if !holdsTemplate(v) {
			continue
		}
		keys = append(keys, k)
		values = leafStrings(expanded[k], values)
	}
	return keys, values
}

// holdsTemplate reports whether a string inside v holds a template.
func holdsTemplate(v any) bool {
	found := false
	eachString(v, func(s string) {
		if !found && len(findTemplates(s)) > 0 {
			found = true
		}
	})
	return found
}
