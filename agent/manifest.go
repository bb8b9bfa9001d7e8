package agent

import "github.com/ccm-fleet/ccm/trust/policy"

// manifestTempPattern names the per-request directories bundles are
// unpacked into, below os.TempDir().
const manifestTempPattern = policy.ManifestTempPattern

// manifestMessage is err's text, said to be about the manifest.
func manifestMessage(err error) string { return policy.ManifestMessage(err) }
