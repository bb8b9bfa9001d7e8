// Package servicetype is the service resource type: a system service with
// two independent dimensions, whether it is running (ensure: running, the
// default, or stopped) and whether it starts at boot (enable: true, false or
// unset to leave boot configuration alone).
//
// The package owns the service properties and their validation (service
// names are limited to a safe character set so they can never be read as
// options or shell syntax), the apply logic (running state first, then
// enabled state, with subscribe refreshes restarting a running service), the
// noop messages, and the Provider interface that service providers such as
// providers/systemd implement. It knows nothing of any init system.
package servicetype
