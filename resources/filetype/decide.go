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

// Noop messages; when something already at the path differs, ": " and what
// differs follow.
const (
	msgCreateFile      = "Would have created the file"
	msgCreateDirectory = "Would have created directory"
	msgRemove          = "Would have removed the file"
	// msgUpdateAttributes is CCM's message when only owner, group or mode
	// differ on an existing file or directory.
	msgUpdateAttributes = "Would have updated attributes"
)

// desired is the resolved desired state of one file resource.
type desired struct {
	ensure string
	// manageContent is false when neither content nor source is set.
	manageContent bool
	// checksum is the SHA-256 of the desired content when managed.
	checksum           string
	owner, group, mode string
}

// plan is the decision for one resource.
type plan struct {
	action action
	// replace asks for what is at the path (a file where a directory is
	// wanted, or the reverse) to be removed first.
	replace bool
	// diffs says what differs in an existing file or directory.
	diffs []string
	// existing is true when the directory asked for exists and only its
	// attributes differ.
	existing bool
}

// noopMessage returns the action's noop message ("Would have created the
// file", ...), followed by what differs when something exists already.
func (p plan) noopMessage() string {
	var msg string
	switch p.action {
	case actionNone:
		return ""
	case actionRemove:
		msg = msgRemove
	case actionCreateDirectory:
		msg = msgCreateDirectory
		if !p.existing {
			break
		}
		msg = msgUpdateAttributes
	case actionSetAttributes:
		msg = msgUpdateAttributes
	default:
		msg = msgCreateFile
	}
	if len(p.diffs) > 0 {
		msg += ": " + strings.Join(p.diffs, ", ")
	}
	return msg
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
		return plan{action: actionRemove}, nil
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
			return plan{action: actionCreateDirectory}, nil
		case EnsurePresent:
			return plan{action: actionCreateDirectory, replace: true, diffs: []string{"a regular file is in the way"}}, nil
		}
		diffs := attributeDiffs(want, cur.Metadata)
		if len(diffs) == 0 {
			return plan{action: actionNone}, nil
		}
		return plan{action: actionCreateDirectory, diffs: diffs, existing: true}, nil
	}

	switch have {
	case EnsureAbsent:
		return plan{action: actionStore}, nil
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
		return plan{action: actionStore, diffs: diffs}, nil
	case len(diffs) > 0:
		return plan{action: actionSetAttributes, diffs: diffs}, nil
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
