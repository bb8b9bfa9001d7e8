package filetype

import "github.com/ccm-fleet/ccm/protocol"

// DecideForTest exposes decide to the external test package: it returns the
// action's name, whether what is at the path is removed first, and the noop
// message.
func DecideForTest(ensure string, manageContent bool, checksum, owner, group, mode string, cur *protocol.FileState) (string, bool, string, error) {
	pl, err := decide(desired{ensure: ensure, manageContent: manageContent, checksum: checksum, owner: owner, group: group, mode: mode}, cur)
	return pl.action.String(), pl.replace, pl.noopMessage(), err
}

// RemoveMessageForTest returns the noop message of removing what cur
// describes, with force as given.
func RemoveMessageForTest(force bool, cur *protocol.FileState) (string, error) {
	pl, err := decide(desired{ensure: EnsureAbsent, force: force}, cur)
	return pl.noopMessage(), err
}
