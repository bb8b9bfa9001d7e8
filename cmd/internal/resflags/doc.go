// Package resflags registers the command line flags for resource
// properties, shared by ccm-agent ensure and ccm-orch ensure so both accept
// the same flags for the same type. Its table is built from the resource
// catalog, which declares each type's command and flags. It turns the flags
// a user set into the raw property map the engine decodes; flags left unset
// are left out, so the type's own defaults apply.
package resflags
