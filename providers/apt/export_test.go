package apt

// SetLockPaths replaces the dpkg lock files p checks for a holder, so that
// specs with a fake runner do not depend on who holds the host's locks.
func SetLockPaths(p *Provider, paths []string) { p.lockPaths = paths }
