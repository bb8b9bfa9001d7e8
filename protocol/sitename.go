package protocol

// SiteFact is the fact naming the site (datacenter, region) a host is in,
// as its agent's configuration says; hosts of no configured site do not
// have it.
const SiteFact = "site"

// MaxSiteLength is the longest site name accepted.
const MaxSiteLength = 64

// ValidateSite checks a site name: 1 to 64 ASCII letters, digits, '_' and
// '-', starting with a letter or a digit, so that it is one NATS subject
// token, a KV key and a JetStream domain name as it is. Errors wrap
// ErrBadRequest and quote the name.
func ValidateSite(name string) error {
	switch {
	case name == "":
		return badRequest("site name must not be empty")
	case len(name) > MaxSiteLength:
		return badRequest("site name %.70q is %d characters long, the limit is %d", name, len(name), MaxSiteLength)
	case !isLetter(name[0]) && !isDigit(name[0]):
		return badRequest("site name %q must start with a letter or a digit", name)
	}
	for i := 0; i < len(name); i++ {
		if b := name[i]; !isLetter(b) && !isDigit(b) && b != '_' && b != '-' {
			return badRequest("site name %q: character at position %d is not allowed: use letters, digits, '_' and '-'", name, i)
		}
	}
	return nil
}
