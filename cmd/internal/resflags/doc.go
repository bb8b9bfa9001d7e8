// Package resflags is the one table of command line flags for resource
// properties, shared by ccm-agent ensure and ccm-orch ensure so both accept
// the same flags for the same type. It turns the flags a user set into the
// raw property map the engine decodes; flags left unset are left out, so the
// type's own defaults apply.
package resflags
