package scaffoldchoria

import (
	"errors"
	"fmt"
	"text/template"

	"github.com/CloudyKit/jet/v6"

	"github.com/ccm-fleet/ccm/resources/templates"
)

// goData is the dot of Go templates: {{ .facts.x }} and {{ .data.y }}, also
// spelt .Facts and .Data as in CCM (facts answer to gopsutil's Go field
// names too: .Facts.host.info.Hostname).
func goData(env *templates.Env) map[string]any {
	return map[string]any{"facts": env.FactsView(), "data": env.Data(), "Facts": env.FactsView(), "Data": env.Data()}
}

// jetData makes facts and data (also spelt Facts and Data, as in CCM) Jet
// variables. The library hands a
// jet.VarMap to Jet as its variables (and as the dot), anything else only as
// the dot.
func jetData(env *templates.Env) jet.VarMap {
	vars := jet.VarMap{}
	vars.Set("facts", env.FactsView())
	vars.Set("data", env.Data())
	vars.Set("Facts", env.FactsView())
	vars.Set("Data", env.Data())
	return vars
}

// goFuncs are the functions Go templates get besides Sprig, render and write.
func goFuncs(env *templates.Env) template.FuncMap {
	funcs := env.GoCallerFuncs()
	funcs["lookup"] = goLookup(env)
	return funcs
}

// goLookup is lookup(key) or lookup(key, default) for Go templates.
func goLookup(env *templates.Env) any {
	return func(key string, def ...any) (any, error) {
		if len(def) > 1 {
			return nil, fmt.Errorf("lookup takes a key and an optional default, got %d arguments", 1+len(def))
		}
		v, err := env.Lookup(key)
		if errors.Is(err, templates.ErrMissingKey) && len(def) == 1 {
			return def[0], nil
		}
		return v, err
	}
}

// jetFuncs are the functions Jet templates get besides render and write.
func jetFuncs(env *templates.Env) map[string]jet.Func {
	funcs := env.JetCallerFuncs()
	funcs["lookup"] = env.JetLookup()
	return funcs
}
