package catalog

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/archivetype"
)

// ErrUndeclarable is wrapped by the error of Objects, and of GossObjects,
// for goss rules holding a key whose host objects the catalog cannot list:
// gossfile includes (rules read from other files), kernel-param, matching,
// user, group, process, dns, interface, mount, an http rule's proxy, or a
// key goss does not know.
var ErrUndeclarable = errors.New("the resource catalog cannot declare what it touches, so no scope could judge it")

// ErrGossRule is wrapped by the error of GossObjects for a rule the
// catalog reads but refuses as written: a relative path, an http rule
// that follows redirects, an attribute that is not a string.
var ErrGossRule = errors.New("goss rule refused")

// GossShell is the shell goss runs a command rule's line with, looked up
// in the agent's PATH: sh -c LINE (catalog.RunShell).
const GossShell = "sh"

// gossKey declares the host objects of the rules under one top-level goss
// key: check names the key in decisions ("health_checks[0].goss_rules.file"),
// id is a rule's key, attrs its attributes.
type gossKey func(check, id string, attrs map[string]any) ([]HostObject, error)

// gossKeys are the goss keys whose rules the catalog declares; any other
// key is undeclarable.
var gossKeys = map[string]gossKey{
	"file":    gossFile,
	"command": gossCommand,
	"http":    gossHTTP,
	"package": gossName(Package),
	"service": gossName(Service),
	"port":    gossPort,
	"addr":    gossAddr,
}

// GossObjects lists the host objects the goss rules of the health check
// at index i touch, each judged by the scope of its kind: files read
// (file.paths or file.read_paths), commands run by sh -c (exec), URLs
// fetched (net.urls), addresses dialled (net.urls), packages and services
// queried (package.names, service.names), and the kernel tables a port
// rule reads. A key it cannot declare is an error wrapping ErrUndeclarable
// and naming the key; a rule it refuses as written wraps ErrGossRule.
func GossObjects(i int, rules map[string]any) ([]HostObject, error) {
	base := fmt.Sprintf("health_checks[%d].goss_rules", i)
	var out []HostObject
	for _, key := range slices.Sorted(maps.Keys(rules)) {
		declare, ok := gossKeys[key]
		if !ok {
			// goss reads its keys without regard to case ("FILE" is
			// file): only the lower-case keys above are declared.
			return nil, fmt.Errorf("property %s: key %q: %w", base, key, ErrUndeclarable)
		}
		check := base + "." + key
		ids, ok := rules[key].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("property %s: %w: the rules of %q are not a mapping", check, ErrGossRule, key)
		}
		for _, id := range slices.Sorted(maps.Keys(ids)) {
			attrs, ok := ids[id].(map[string]any)
			if !ok && ids[id] != nil {
				return nil, fmt.Errorf("property %s %q: %w: the rule is not a mapping", check, id, ErrGossRule)
			}
			if err := lowerKeys(attrs); err != nil {
				return nil, fmt.Errorf("property %s %q: %w: %w", check, id, ErrGossRule, err)
			}
			objs, err := declare(check, id, attrs)
			if err != nil {
				return nil, fmt.Errorf("property %s %q: %w", check, id, err)
			}
			out = append(out, objs...)
		}
	}
	return out, nil
}

// lowerKeys refuses an attribute that is not lower-case ASCII letters,
// digits and '-', as goss spells every attribute: goss reads attributes
// without regard to case, Unicode folding included, so "PATH" or
// "addre\u017f\u017f" (long s) would set what "path" or "address" sets.
func lowerKeys(attrs map[string]any) error {
	for k := range attrs {
		if strings.IndexFunc(k, func(r rune) bool { return (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' }) >= 0 {
			return fmt.Errorf("attribute %q: goss attributes are written in lower-case letters, digits and '-'", k)
		}
	}
	return nil
}

// attr is the string attribute name of a rule, def when it is absent.
func attr(attrs map[string]any, name, def string) (string, error) {
	v, ok := attrs[name]
	if !ok || v == nil {
		return def, nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%w: attribute %q is not a string", ErrGossRule, name)
	}
	if s == "" {
		return def, nil
	}
	return s, nil
}

// absolute refuses a path goss would read relative to the agent's own
// working directory.
func absolute(what, p string) error {
	if !filepath.IsAbs(p) {
		return fmt.Errorf("%w: %s %q is not an absolute path", ErrGossRule, what, p)
	}
	return nil
}

// gossFile: the file a rule names (its key, or its path attribute) is read:
// its metadata, its content and its digests.
func gossFile(check, id string, attrs map[string]any) ([]HostObject, error) {
	p, err := attr(attrs, "path", id)
	if err != nil {
		return nil, err
	}
	if err := absolute("path", p); err != nil {
		return nil, err
	}
	return []HostObject{{Kind: PathRead, Check: check, Value: filepath.Clean(p)}}, nil
}

// gossCommand: goss runs the line (its key, or its exec attribute) with
// sh -c, sh looked up in the agent's PATH.
func gossCommand(check, id string, attrs map[string]any) ([]HostObject, error) {
	line, err := attr(attrs, "exec", id)
	if err != nil {
		return nil, err
	}
	return []HostObject{{Kind: Command, Check: check, Value: line, Runner: RunShell}}, nil
}

// gossHTTP: the URL (its key, or its url attribute) is fetched, and the
// files its TLS attributes name are read. goss follows redirects with its
// own client, where no scope judges each hop: a rule must not follow them.
// A proxy is dialled instead of the URL's host: undeclarable.
func gossHTTP(check, id string, attrs map[string]any) ([]HostObject, error) {
	raw, err := attr(attrs, "url", id)
	if err != nil {
		return nil, err
	}
	shown := archivetype.RedactURL(raw)
	if _, ok := attrs["proxy"]; ok {
		return nil, fmt.Errorf("attribute \"proxy\": %w", ErrUndeclarable)
	}
	if nf, _ := attrs["no-follow-redirects"].(bool); !nf {
		return nil, fmt.Errorf("%w: %s would follow redirects, whose hops no scope judges: set no-follow-redirects: true", ErrGossRule, shown)
	}
	out := []HostObject{{Kind: URL, Check: check, Value: shown}}
	for _, name := range []string{"ca-file", "cert-file", "key-file"} {
		p, err := attr(attrs, name, "")
		if err != nil {
			return nil, err
		}
		if p == "" {
			continue
		}
		if err := absolute(name, p); err != nil {
			return nil, err
		}
		out = append(out, HostObject{Kind: PathRead, Check: check + " " + name, Value: filepath.Clean(p)})
	}
	return out, nil
}

// gossName: a package or service rule queries the name (its key, or its
// name attribute) of the package or service manager.
func gossName(kind Kind) gossKey {
	return func(check, id string, attrs map[string]any) ([]HostObject, error) {
		name, err := attr(attrs, "name", id)
		if err != nil {
			return nil, err
		}
		return []HostObject{{Kind: kind, Check: check, Value: name}}, nil
	}
}

// gossPort: a port rule ("tcp:22", "udp6:53") reads the kernel's socket
// tables, all four of them whatever the rule's protocol (goss looks every
// listening socket up at once, without the processes holding them).
func gossPort(check, _ string, _ map[string]any) ([]HostObject, error) {
	out := make([]HostObject, 0, 4)
	for _, proto := range []string{"tcp", "tcp6", "udp", "udp6"} {
		out = append(out, HostObject{Kind: PathRead, Check: check, Value: "/proc/net/" + proto})
	}
	return out, nil
}

// gossAddr: an addr rule ("tcp://10.0.0.1:22") dials the address (its
// key, or its address attribute). A local-address binds the dial to an
// address of the host's own: undeclarable.
func gossAddr(check, id string, attrs map[string]any) ([]HostObject, error) {
	raw, err := attr(attrs, "address", id)
	if err != nil {
		return nil, err
	}
	if _, ok := attrs["local-address"]; ok {
		return nil, fmt.Errorf("attribute \"local-address\": %w", ErrUndeclarable)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "tcp" && u.Scheme != "udp") || u.Port() == "" || u.Hostname() == "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("%w: address %q: use tcp://HOST:PORT or udp://HOST:PORT", ErrGossRule, raw)
	}
	return []HostObject{{Kind: Address, Check: check, Value: raw}}, nil
}

// gossObjects are the host objects of every goss health check of c.
func gossObjects(c *resources.CommonProperties) ([]HostObject, error) {
	var out []HostObject
	for i := range c.HealthChecks {
		if !c.HealthChecks[i].IsGoss() {
			continue
		}
		objs, err := GossObjects(i, c.HealthChecks[i].GossRules)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}
