package filetype

import (
	"fmt"
	"strings"

	"github.com/ccm-fleet/ccm/protocol"
)

// action is what apply must do to reach the desired state.
type action int

const (
	actionNone action = iota
	actionRemove
	actionCreateDirectory
	actionStore
	actionSetAttributes
)

var actionNames = map[action]string{
	actionNone:            "none",
	actionRemove:          "Remove",
	actionCreateDirectory: "CreateDirectory",
	actionStore:           "Store",
	actionSetAttributes:   "SetAttributes",
}

func (a action) String() string { return actionNames[a] }

// Noop messages, CCM's sentences as CCM itself says them; when something
// already at the path differs, ": " and what differs follow.
const (
	// msgCreateFile is said for a file with managed content that is
	// missing or differs, in content or only in owner, group or mode.
	msgCreateFile = "Would have created the file"
	// msgCreateEmptyFile is said for a missing file whose content is not
	// managed.
	msgCreateEmptyFile = "Would have created an empty file with requested attributes"
	// msgCreateDirectory is said for a directory that is missing or whose
	// owner, group or mode differ.
	msgCreateDirectory = "Would have created directory"
	// msgUpdateAttributes is said when only owner, group or mode differ on
	// a file whose content is not managed.
	msgUpdateAttributes = "Would have updated attributes"
	// msgRemove is said for removing a file, a symbolic link or a special
	// file; msgRemoveDirectory and msgRemoveDirectoryForce for a directory.
	msgRemove               = "Would have removed the file"
	msgRemoveDirectory      = "Would have removed the directory"
	msgRemoveDirectoryForce = "Would have recursively removed the directory"
)

// desired is the resolved desired state of one file resource.
type desired struct {
	ensure string
	// manageContent is false when neither content nor source is set.
	manageContent bool
	// checksum is the SHA-256 of the desired content when managed.
	checksum           string
	owner, group, mode string
	// force is the force property: with absent, a non-empty directory is
	// removed too.
	force bool
}

// plan is the decision for one resource.
type plan struct {
	action action
	// replace asks for what is at the path (a file where a directory is
	// wanted, or the reverse) to be removed first.
	replace bool
	// diffs says what differs in an existing file or directory.
	diffs []string
	// message is the noop message without what differs.
	message string
}

// noopMessage returns the plan's noop message ("Would have created the
// file", ...), followed by what differs when something exists already.
func (p plan) noopMessage() string {
	if p.action == actionNone {
		return ""
	}
	msg := p.message
	if len(p.diffs) > 0 {
		msg += ": " + strings.Join(p.diffs, ", ")
	}
	return msg
}

// removeMessage is CCM's noop message for removing what cur describes.
func removeMessage(cur *protocol.FileState, force bool) string {
	switch {
	case cur.Ensure != EnsureDirectory:
		return msgRemove
	case force:
		return msgRemoveDirectoryForce
	}
	return msgRemoveDirectory
}

// storeMessage is CCM's noop message for writing a file: an empty one when
// its content is not managed.
func storeMessage(want desired) string {
	if want.manageContent {
		return msgCreateFile
	}
	return msgCreateEmptyFile
}

// decide compares the current state with the desired one, checking ensure,
// content, owner, group and mode in that order, and returns what to do. It
// fails when a symbolic link or special file is where a file or directory is
// wanted.
func decide(want desired, cur *protocol.FileState) (plan, error) {
	have := cur.Ensure
	if want.ensure == EnsureAbsent {
		if have == EnsureAbsent {
			return plan{action: actionNone}, nil
		}
		return plan{action: actionRemove, message: removeMessage(cur, want.force)}, nil
	}
	switch have {
	case EnsureSymlink:
		return plan{}, ErrSymlink
	case EnsureAbsent, EnsurePresent, EnsureDirectory:
	default:
		return plan{}, fmt.Errorf("%w (found %s)", ErrUnsupportedFileType, have)
	}

	if want.ensure == EnsureDirectory {
		switch have {
		case EnsureAbsent:
			return plan{action: actionCreateDirectory, message: msgCreateDirectory}, nil
		case EnsurePresent:
			return plan{action: actionCreateDirectory, message: msgCreateDirectory, replace: true, diffs: []string{"a regular file is in the way"}}, nil
		}
		diffs := attributeDiffs(want, cur.Metadata)
		if len(diffs) == 0 {
			return plan{action: actionNone}, nil
		}
		return plan{action: actionCreateDirectory, message: msgCreateDirectory, diffs: diffs}, nil
	}

	switch have {
	case EnsureAbsent:
		return plan{action: actionStore, message: storeMessage(want)}, nil
	case EnsureDirectory:
		return plan{}, ErrDirectoryInTheWay
	}
	var diffs []string
	contentDiffers := want.manageContent && (cur.Metadata == nil || cur.Metadata.Checksum != want.checksum)
	if contentDiffers {
		diffs = append(diffs, "content differs")
	}
	diffs = append(diffs, attributeDiffs(want, cur.Metadata)...)
	switch {
	case contentDiffers:
		return plan{action: actionStore, message: msgCreateFile, diffs: diffs}, nil
	case len(diffs) > 0 && want.manageContent:
		// Only attributes differ: they are set, the content is not
		// rewritten, and CCM's sentence is still the one for creating.
		return plan{action: actionSetAttributes, message: msgCreateFile, diffs: diffs}, nil
	case len(diffs) > 0:
		return plan{action: actionSetAttributes, message: msgUpdateAttributes, diffs: diffs}, nil
	}
	return plan{action: actionNone}, nil
}

// unmet lists how cur falls short of want; empty means the desired state is
// reached.
func unmet(want desired, cur *protocol.FileState) []string {
	if cur.Ensure != want.ensure {
		return []string{fmt.Sprintf("ensure is %s, should be %s", cur.Ensure, want.ensure)}
	}
	if want.ensure == EnsureAbsent {
		return nil
	}
	var diffs []string
	if want.ensure == EnsurePresent && want.manageContent && (cur.Metadata == nil || cur.Metadata.Checksum != want.checksum) {
		diffs = append(diffs, "content differs")
	}
	return append(diffs, attributeDiffs(want, cur.Metadata)...)
}

// attributeDiffs compares owner, group and mode, in that order.
func attributeDiffs(want desired, md *protocol.FileMetadata) []string {
	if md == nil {
		md = &protocol.FileMetadata{}
	}
	var diffs []string
	if !idMatches(want.owner, md.Owner, md.Extended["uid"]) {
		diffs = append(diffs, fmt.Sprintf("owner %s should be %s", orUnknown(md.Owner), want.owner))
	}
	if !idMatches(want.group, md.Group, md.Extended["gid"]) {
		diffs = append(diffs, fmt.Sprintf("group %s should be %s", orUnknown(md.Group), want.group))
	}
	if md.Mode != want.mode {
		diffs = append(diffs, fmt.Sprintf("mode %s should be %s", orUnknown(md.Mode), want.mode))
	}
	return diffs
}

// idMatches compares a desired owner or group, a name or a numeric id, with
// the name Status reported and the numeric id it put in Extended.
func idMatches(want, haveName string, haveID any) bool {
	if want == haveName {
		return true
	}
	return haveID != nil && isDigits(want) && fmt.Sprint(haveID) == want
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
