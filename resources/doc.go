// Package resources defines what a resource is: the properties every type
// shares (name, alias, ensure, provider, require, subscribe, control), the
// Type and Provider contracts each resource type implements, and the Registry
// that maps types to the providers able to manage them on a host.
//
// Each type lives in its own sub-package (filetype, exectype, …) and owns its
// idempotency logic and noop messages; providers (package providers) do the
// platform work. The engine sub-package runs resources end to end.
//
// Provider selection: a resource that names a provider with provider: gets
// that provider or an error. Otherwise every provider of the type that is not
// explicit-only is asked IsManageable, and the one with the lowest priority
// number wins (1 is first choice); ties go to the earliest registered.
package resources
