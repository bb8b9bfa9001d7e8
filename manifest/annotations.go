package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/choria-io/fisk"
	"github.com/expr-lang/expr"
	"gopkg.in/yaml.v3"

	"github.com/ccm-fleet/ccm/protocol"
)

// ErrValidation is returned, with resources.ErrInvalid, when resolved data
// breaks an @require or @validate annotation.
var ErrValidation = errors.New("data validation failed")

// maxRules bounds the annotations of one document.
const maxRules = 1024

// Rule is the validation a data key's annotations ask for: comment lines
// "# @require" (or "# @required": the value may not be missing, null or "";
// false and 0 are values) and "# @validate EXPR" (EXPR over value, see
// Validate) above the key in a YAML document's data section.
type Rule struct {
	// Key is the dotted path below data ("web.listen_port").
	Key string
	// Required is set by @require.
	Required bool
	// Validation is the expression of @validate, "" when none.
	Validation string
}

// AnnotationWarning is an annotation of the data that is not understood:
// a comment line starting with "@" that is neither @require, @required nor
// @validate (a misspelt "@requiired"). It is not an error; CCM logs it.
type AnnotationWarning struct {
	// Key is the dotted path below data ("web.listen_port").
	Key string
	// Annotation is the comment line as written, without "#".
	Annotation string
}

// String is the warning as one line: data.KEY: unknown annotation "@x".
func (w AnnotationWarning) String() string {
	return fmt.Sprintf("data.%s: unknown annotation %q", w.Key, w.Annotation)
}

// UnknownAnnotationMessage is the message CCM logs, at warning level, for
// an annotation it does not understand, with the attributes key and
// annotation.
const UnknownAnnotationMessage = "Unrecognized annotation in hiera data"

// LogAnnotationWarnings logs each warning as CCM does: UnknownAnnotationMessage
// at warning level, with key and annotation. A nil log discards them.
func LogAnnotationWarnings(log *slog.Logger, ws []AnnotationWarning) {
	if log == nil {
		return
	}
	for _, w := range ws {
		log.Warn(UnknownAnnotationMessage, "key", w.Key, "annotation", w.Annotation)
	}
}

// parseAnnotations reads the annotations of a YAML document's data section
// (JSON has no comments, so a JSON document has none). It runs after the
// strict decode accepted b, and reads only comments and key names.
func parseAnnotations(b []byte) ([]Rule, []AnnotationWarning, error) {
	if protocol.DetectEncoding(b) != protocol.EncodingYAML || !bytes.Contains(b, []byte("@")) {
		return nil, nil, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil || len(doc.Content) == 0 {
		return nil, nil, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, nil, nil
	}
	var rules []Rule
	var warnings []AnnotationWarning
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "data" && root.Content[i+1].Kind == yaml.MappingNode {
			var err error
			rules, warnings, err = walkAnnotations(root.Content[i+1], "", rules, warnings)
			if err != nil {
				return nil, nil, err
			}
		}
	}
	sort.Slice(rules, func(i, j int) bool { return rules[i].Key < rules[j].Key })
	return rules, warnings, nil
}

func walkAnnotations(m *yaml.Node, prefix string, rules []Rule, warnings []AnnotationWarning) ([]Rule, []AnnotationWarning, error) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		key := prefix + k.Value
		r := Rule{Key: key}
		for _, line := range strings.Split(k.HeadComment, "\n") {
			line = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "#"))
			switch {
			case !strings.HasPrefix(line, "@"):
			case line == "@require" || line == "@required":
				r.Required = true
			case strings.HasPrefix(line, "@validate "):
				if e := strings.TrimSpace(strings.TrimPrefix(line, "@validate ")); e != "" {
					if _, err := expr.Compile(e, validatorOptions(nil)...); err != nil {
						return nil, nil, invalidWith(err, "data.%s: @validate %q: %s", key, e, firstLine(err.Error()))
					}
					r.Validation = e
				}
			default:
				if len(warnings) < maxRules {
					warnings = append(warnings, AnnotationWarning{Key: key, Annotation: line})
				}
			}
		}
		if r.Required || r.Validation != "" {
			if len(rules) >= maxRules {
				return nil, nil, invalidf("data: more than %d annotated keys", maxRules)
			}
			rules = append(rules, r)
		}
		if v.Kind == yaml.MappingNode {
			var err error
			if rules, warnings, err = walkAnnotations(v, key+".", rules, warnings); err != nil {
				return nil, nil, err
			}
		}
	}
	return rules, warnings, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// Validate checks data against rules, as CCM does: @require fails for a
// missing key, null or ""; @validate runs its expression with the value as
// value (a non-string scalar as its text; maps, lists and missing values are
// not validated). Every failure is named in one error wrapping
// ErrValidation and resources.ErrInvalid.
func Validate(data map[string]any, rules []Rule) error {
	var msgs []string
	for _, r := range rules {
		v, found := walkData(data, r.Key)
		if r.Required && (v == nil || v == "") {
			msgs = append(msgs, fmt.Sprintf("data.%s is required but has no value", r.Key))
			if !found || v == nil {
				continue
			}
		}
		if r.Validation == "" || v == nil {
			continue
		}
		switch v.(type) {
		case map[string]any, []any:
			continue
		}
		s, ok := v.(string)
		if !ok {
			s = stringOf(v)
		}
		var fail string
		out, err := expr.Eval(r.Validation, validatorEnv(s))
		switch {
		case err != nil:
			fail = firstLine(err.Error())
		case out != true:
			fail = "it is false"
		}
		if fail != "" {
			msgs = append(msgs, fmt.Sprintf("data.%s (%q) fails @validate %s: %s", r.Key, s, r.Validation, fail))
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return invalidWith(ErrValidation, "%s: %s", ErrValidation, strings.Join(msgs, "; "))
}

func stringOf(v any) string {
	if f, ok := v.(float64); ok && f == float64(int64(f)) {
		return strconv.FormatInt(int64(f), 10)
	}
	return fmt.Sprint(v)
}

func walkData(data map[string]any, key string) (any, bool) {
	var cur any = data
	for _, part := range strings.Split(key, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

var shellUnsafe = []string{"`", "$", ";", "|", "&", ">", "<", "(", ")", "\n"}

// isHostnameLabel reports whether l is a DNS label: 1 to 63 ASCII letters,
// digits and hyphens, neither first nor last a hyphen. (A regular
// expression of the same took about 0.7 ms to compile at every start of
// every program that links this package.)
func isHostnameLabel(l string) bool {
	if len(l) == 0 || len(l) > 63 {
		return false
	}
	for i := 0; i < len(l); i++ {
		switch c := l[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-' && i > 0 && i < len(l)-1:
		default:
			return false
		}
	}
	return true
}

// validators are the functions of @validate expressions, CCM's names and
// their snake_case spellings.
var validators = map[string]func(args ...any) (any, error){
	"isIP":   oneString(func(s string) (bool, error) { return net.ParseIP(s) != nil, nil }),
	"isIPv4": oneString(func(s string) (bool, error) { ip := net.ParseIP(s); return ip != nil && ip.To4() != nil, nil }),
	"isIPv6": oneString(func(s string) (bool, error) {
		ip := net.ParseIP(s)
		return ip != nil && ip.To4() == nil, nil
	}),
	"isInt": oneString(func(s string) (bool, error) { _, err := strconv.ParseInt(s, 10, 64); return err == nil, nil }),
	"isFloat": oneString(func(s string) (bool, error) {
		_, err := strconv.ParseFloat(s, 64)
		return err == nil, nil
	}),
	"isDuration": oneString(func(s string) (bool, error) { _, err := fisk.ParseDuration(s); return err == nil, nil }),
	"isShellSafe": oneString(func(s string) (bool, error) {
		s = strings.TrimSpace(s)
		for _, c := range shellUnsafe {
			if strings.Contains(s, c) {
				return false, fmt.Errorf("may not contain %q", c)
			}
		}
		return true, nil
	}),
	"isHostname": oneString(func(s string) (bool, error) { return isHostname(s, false), nil }),
	"isFQDN":     oneString(func(s string) (bool, error) { return isHostname(s, true), nil }),
	"isRegex": func(args ...any) (any, error) {
		if len(args) != 2 {
			return nil, fmt.Errorf("isRegex takes a value and a pattern")
		}
		s, ok1 := args[0].(string)
		p, ok2 := args[1].(string)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("isRegex takes two strings")
		}
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("invalid regex %q: %w", p, err)
		}
		return re.MatchString(s), nil
	},
}

var snakeNames = map[string]string{
	"isIP": "is_ip", "isIPv4": "is_ipv4", "isIPv6": "is_ipv6", "isInt": "is_int", "isFloat": "is_float",
	"isDuration": "is_duration", "isRegex": "is_regex", "isShellSafe": "is_shellsafe",
	"isHostname": "is_hostname", "isFQDN": "is_fqdn",
}

func isHostname(s string, fqdn bool) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	labels := strings.Split(s, ".")
	if fqdn && len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if !isHostnameLabel(l) {
			return false
		}
	}
	return true
}

func oneString(f func(string) (bool, error)) func(args ...any) (any, error) {
	return func(args ...any) (any, error) {
		if len(args) != 1 {
			return nil, fmt.Errorf("takes one value, got %d", len(args))
		}
		s, ok := args[0].(string)
		if !ok {
			s = stringOf(args[0])
		}
		return f(s)
	}
}

func validatorEnv(value string) map[string]any {
	env := map[string]any{"value": value}
	for name, f := range validators {
		env[name] = f
		env[snakeNames[name]] = f
	}
	return env
}

func validatorOptions(_ any) []expr.Option {
	return []expr.Option{expr.Env(validatorEnv("")), expr.AsBool()}
}

// decodeRules reads data_rules: {"dotted.key": {"require": true,
// "validate": "EXPR"}}, the JSON form of the annotations.
func decodeRules(v any) ([]Rule, error) {
	obj, err := objectOrNil(v, "data_rules")
	if err != nil || obj == nil {
		return nil, err
	}
	if len(obj) > maxRules {
		return nil, invalidf("data_rules: %d keys, the limit is %d", len(obj), maxRules)
	}
	var rules []Rule
	for _, k := range sortedKeys(obj) {
		where := fmt.Sprintf("data_rules[%q]", k)
		if k == "" || strings.Contains(k, "..") || strings.HasPrefix(k, ".") || strings.HasSuffix(k, ".") {
			return nil, invalidf("%s: not a dotted data key", where)
		}
		spec, err := objectOrNil(obj[k], where)
		if err != nil {
			return nil, err
		}
		if err := onlyKeys(spec, []string{"require", "validate"}, where); err != nil {
			return nil, err
		}
		r := Rule{Key: k}
		if rv, ok := spec["require"]; ok && rv != nil {
			b, ok := rv.(bool)
			if !ok {
				return nil, invalidf("%s.require: expected true or false, got %s", where, kind(rv))
			}
			r.Required = b
		}
		if vv, ok := spec["validate"]; ok && vv != nil {
			e, ok := vv.(string)
			if !ok {
				return nil, invalidf("%s.validate: expected an expression, got %s", where, kind(vv))
			}
			if _, err := expr.Compile(e, validatorOptions(nil)...); err != nil {
				return nil, invalidWith(err, "%s.validate %q: %s", where, e, firstLine(err.Error()))
			}
			r.Validation = e
		}
		if r.Required || r.Validation != "" {
			rules = append(rules, r)
		}
	}
	return rules, nil
}

// mergeRules adds the annotations b to the rules a (same key: required if
// either says so; b's expression when a has none).
func mergeRules(a, b []Rule) []Rule {
	byKey := map[string]int{}
	out := append([]Rule(nil), a...)
	for i, r := range out {
		byKey[r.Key] = i
	}
	for _, r := range b {
		i, ok := byKey[r.Key]
		if !ok {
			byKey[r.Key] = len(out)
			out = append(out, r)
			continue
		}
		out[i].Required = out[i].Required || r.Required
		if out[i].Validation == "" {
			out[i].Validation = r.Validation
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// encodeRules is the data_rules form of rules.
func encodeRules(rules []Rule) map[string]any {
	out := make(map[string]any, len(rules))
	for _, r := range rules {
		spec := map[string]any{}
		if r.Required {
			spec["require"] = true
		}
		if r.Validation != "" {
			spec["validate"] = r.Validation
		}
		out[r.Key] = spec
	}
	return out
}
