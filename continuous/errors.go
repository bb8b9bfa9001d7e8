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
