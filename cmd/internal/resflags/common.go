package resflags

import (
	"fmt"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/resources/catalog"
)

// Common are the arguments and flags every "ensure <type>" takes, in both
// ccm-agent and ccm-orch: the name, the ensure value, and the common
// properties alias, provider and control.if/unless.
type Common struct {
	Name, Ensure, Alias, Provider, If, Unless string
	// typeName is the type the flags were registered for.
	typeName string
	// third is scaffold's third argument (CCM's NAME SOURCE ENSURE).
	third string
	// Sensitive keeps the resource's content out of diffs, events, logs
	// and history.
	Sensitive bool
	// Checks are health check commands (CCM's --check), each with
	// CheckTries tries CheckSleep apart.
	Checks     []string
	CheckTries int
	CheckSleep string
}

// Register adds the name and ensure arguments and the common property
// flags to cmd. As in CCM, the second argument of archive may be the URL
// and that of scaffold the source (then followed by the ensure value).
func (c *Common) Register(cmd *fisk.CmdClause, t TypeFlags) {
	c.typeName = t.Type
	cmd.Arg("name", t.NameHelp).Required().StringVar(&c.Name)
	pos := catalog.PositionalOf(t.Type)
	if pos == nil {
		cmd.Arg("ensure", "Desired state: "+t.EnsureHelp).StringVar(&c.Ensure)
	} else {
		cmd.Arg("ensure", "Desired state: "+t.EnsureHelp+"; "+pos.Help).StringVar(&c.Ensure)
	}
	if pos != nil && pos.EnsureAfter {
		cmd.Arg("ensure-after-"+pos.Property, "Desired state after a "+pos.Property+" given as an argument").StringVar(&c.third)
	}
	cmd.Flag("alias", "Second name for require/subscribe references").StringVar(&c.Alias)
	cmd.Flag("provider", "Force a provider instead of choosing one by facts").StringVar(&c.Provider)
	cmd.Flag("if", "Manage only where this expression is true, e.g. \"facts.os == 'debian'\"").PlaceHolder("EXPR").StringVar(&c.If)
	cmd.Flag("unless", "Do not manage where this expression is true").PlaceHolder("EXPR").StringVar(&c.Unless)
	cmd.Flag("sensitive", "Keep the content out of diffs, events, logs and history (diffs say \"content differs; sensitive\")").UnNegatableBoolVar(&c.Sensitive)
	cmd.Flag("check", "A health check run after the resource, nagios style: exit 0 OK; 1 WARNING, 2 CRITICAL or other UNKNOWN fails the resource, as in CCM (repeatable)").PlaceHolder("COMMAND").StringsVar(&c.Checks)
	cmd.Flag("check-tries", "With --check, tries until each check is OK").PlaceHolder("N").IntVar(&c.CheckTries)
	cmd.Flag("check-sleep", "With --check, the pause between tries").PlaceHolder("DURATION").StringVar(&c.CheckSleep)
}

// Properties merges the common properties into the type's properties,
// reading CCM's positional archive URL and scaffold source. A property
// given both as an argument and as a flag is an error.
func (c *Common) Properties(typeProps map[string]any) (map[string]any, error) {
	typeProps["name"] = c.Name
	ensure := c.Ensure
	switch pos := catalog.PositionalOf(c.typeName); {
	case pos.Sets(ensure):
		if err := positional(typeProps, pos.Property, ensure); err != nil {
			return nil, err
		}
		ensure = c.third
	case c.third != "":
		return nil, fmt.Errorf("unexpected argument %q after the ensure value %q", c.third, ensure)
	}
	for k, v := range map[string]string{"ensure": ensure, "alias": c.Alias, "provider": c.Provider} {
		if v != "" {
			typeProps[k] = v
		}
	}
	if c.Sensitive {
		typeProps["sensitive"] = true
	}
	if (c.CheckTries != 0 || c.CheckSleep != "") && len(c.Checks) == 0 {
		return nil, fmt.Errorf("--check-tries and --check-sleep need a --check")
	}
	if len(c.Checks) > 0 {
		checks := make([]any, len(c.Checks))
		for i, cmd := range c.Checks {
			hc := map[string]any{"command": cmd}
			if c.CheckTries != 0 {
				hc["tries"] = c.CheckTries
			}
			if c.CheckSleep != "" {
				hc["try_sleep"] = c.CheckSleep
			}
			checks[i] = hc
		}
		typeProps["health_checks"] = checks
	}
	if c.If != "" || c.Unless != "" {
		control := map[string]any{}
		if c.If != "" {
			control["if"] = c.If
		}
		if c.Unless != "" {
			control["unless"] = c.Unless
		}
		typeProps["control"] = control
	}
	return typeProps, nil
}

// positional sets property key from an argument, refusing it when the
// --key flag gave it too.
func positional(props map[string]any, key, value string) error {
	if have, ok := props[key]; ok {
		return fmt.Errorf("%s %q given both as an argument and as --%s %q: use one", key, value, key, have)
	}
	props[key] = value
	return nil
}

// Has reports whether the type has a flag called name.
func (t TypeFlags) Has(name string) bool {
	for _, f := range t.Flags {
		if f.Name == name {
			return true
		}
	}
	return false
}
