package continuous

import "errors"

// ErrConfig is wrapped by every error loading or validating the agent's
// configuration file.
var ErrConfig = errors.New("invalid CCM agent configuration")

// ErrRefused is wrapped when a bundle is not applied because nothing
// vouches for it: unsigned, a signature that does not verify, a signer the
// policy does not trust or does not allow a resource of the manifest, a
// bundle older than one already applied from the same source.
var ErrRefused = errors.New("bundle refused")

// ErrSensitive is wrapped when a register_when_stable entry is not
// published because it reads data the manifest marks sensitive
// (sensitive_data) or holds one of its values: registrations are readable
// by every host of the fleet.
var ErrSensitive = errors.New("registration would publish sensitive data")

// ErrNoNATS is returned by registrations() in a template when the agent is
// not connected to NATS: its configuration has no registration, obj://
// source or kv:// data, and ccm-agent agent was given no --server,
// --context, NATS_URL or NATS_CONTEXT.
var ErrNoNATS = errors.New("registrations(): this agent is not connected to NATS (no registration, obj:// source or kv:// data in its configuration, and no --server, --context, NATS_URL or NATS_CONTEXT)")

// ErrDataURL is wrapped by every error parsing a data document's location
// (external_data_url, --hiera).
var ErrDataURL = errors.New("invalid data location")

// ErrData is wrapped when a data document cannot be read: missing, too
// large, too slow, refused by the URL scopes, or not the digest it is
// pinned to.
var ErrData = errors.New("data document could not be read")
