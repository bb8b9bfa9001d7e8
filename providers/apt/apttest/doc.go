// Package apttest lets tests install, change and remove a real package on a
// Debian host through apt, without the network and without touching any
// package but its own.
//
// Setup builds a tiny package, ccm-fleet-testpkg, at two versions (1.0-1 and
// 2.0-1) with dpkg-deb, and its neighbours ccm-fleet-testpkg-a,
// ccm-fleet-testpkg-b and zz-ccm-fleet-testpkg-x (1.0-1, names a regular
// expression or glob written for the test package's family reaches), writes
// them into a flat local repository under the temporary directory, registers that repository as an apt source
// (/etc/apt/sources.list.d/ccm-fleet-test.list, trusted) and refreshes only
// that source's index. Every step that changes the host happens under a
// machine-wide lock file, so test binaries of different packages or
// checkouts that use this package run one at a time, and the host is
// cleaned both before (in case an earlier run was killed) and, through the
// test's Cleanup, after: the package is purged with its conffile, the
// neighbours are purged, and the source, its downloaded lists and the
// repository directories are removed.
//
// Available says whether this host can do any of that (root, and dpkg-deb,
// dpkg, dpkg-query, apt-get and apt-cache installed); tests report its
// reason when it cannot (and fail: a spec that needs it never skips).
//
// The package owns nothing else: it neither runs apt-get update for other
// sources nor installs any other package.
package apttest
