package engine

import (
	"reflect"

	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// registerKey is the common property holding register_when_stable entries.
const registerKey = "register_when_stable"

// markRegistrations marks each register_when_stable entry of props that
// reads data marked sensitive (raw, its templates as written, may be nil
// when none was) or holds one of its values (expanded): the fleet reads
// registrations, so such an entry must never be published. Entries are
// judged one by one, so a literal entry beside a secret one stays
// publishable.
func markRegistrations(env *templates.Env, props resources.Properties, raw, expanded map[string]any) {
	entries := props.Common().RegisterWhenStable
	if len(entries) == 0 {
		return
	}
	rawList, _ := raw[registerKey].([]any)
	expList, _ := expanded[registerKey].([]any)
	for i := range entries {
		var r, x any
		if i < len(rawList) {
			r = rawList[i]
		}
		if i < len(expList) {
			x = expList[i]
		} else {
			x = stringsOf(reflect.ValueOf(entries[i]), nil)
		}
		entries[i].Sensitive = env.Sensitive(r, x)
	}
}
