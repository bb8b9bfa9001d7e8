package resflags

import "github.com/choria-io/fisk"

// Common are the arguments and flags every "ensure <type>" takes, in both
// ccm-agent and ccm-orch: the name, the ensure value, and the common
// properties alias, provider and control.if/unless.
type Common struct {
	Name, Ensure, Alias, Provider, If, Unless string
	// Sensitive keeps the resource's content out of diffs, events, logs
	// and history.
	Sensitive bool
}

// Register adds the name and ensure arguments and the common property
// flags to cmd.
func (c *Common) Register(cmd *fisk.CmdClause, t TypeFlags) {
	cmd.Arg("name", t.NameHelp).Required().StringVar(&c.Name)
	cmd.Arg("ensure", "Desired state: "+t.EnsureHelp).StringVar(&c.Ensure)
	cmd.Flag("alias", "Second name for require/subscribe references").StringVar(&c.Alias)
	cmd.Flag("provider", "Force a provider instead of choosing one by facts").StringVar(&c.Provider)
	cmd.Flag("if", "Manage only where this expression is true, e.g. \"facts.os == 'debian'\"").PlaceHolder("EXPR").StringVar(&c.If)
	cmd.Flag("unless", "Do not manage where this expression is true").PlaceHolder("EXPR").StringVar(&c.Unless)
	cmd.Flag("sensitive", "Keep the content out of diffs, events, logs and history (diffs say \"content differs; sensitive\")").UnNegatableBoolVar(&c.Sensitive)
}

// Properties merges the common properties into the type's properties.
func (c *Common) Properties(typeProps map[string]any) map[string]any {
	typeProps["name"] = c.Name
	for k, v := range map[string]string{"ensure": c.Ensure, "alias": c.Alias, "provider": c.Provider} {
		if v != "" {
			typeProps[k] = v
		}
	}
	if c.Sensitive {
		typeProps["sensitive"] = true
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
	return typeProps
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
