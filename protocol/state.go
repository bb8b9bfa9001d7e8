package protocol

import (
	"time"
)

// CommonState is the part of a resource's state document that every type shares.
type CommonState struct {
	Timestamp   time.Time `json:"timestamp"`
	Protocol    string    `json:"protocol"`
	Type        string    `json:"type"`
	Name        string    `json:"name"`
	Ensure      string    `json:"ensure"`
	Changed     bool      `json:"changed"`
	Refreshed   bool      `json:"refreshed"`
	Stable      bool      `json:"stable"`
	Noop        bool      `json:"noop"`
	NoopMessage string    `json:"noop_message,omitempty"`
}

// NewCommonState returns the common state of a resource of typeName called
// name whose current ensure value is ensure, stamped now in UTC.
func NewCommonState(typeName, name, ensure string) CommonState {
	return CommonState{
		Timestamp: time.Now().UTC(),
		Protocol:  StateProtocol(typeName),
		Type:      typeName,
		Name:      name,
		Ensure:    ensure,
	}
}

// State is a per-type state document (io.choria.ccm.v1.resource.<type>.state).
type State interface {
	Common() *CommonState
}

// Common returns the shared part of the state.
func (c *CommonState) Common() *CommonState { return c }

// FileMetadata describes a file or directory as found on disk.
type FileMetadata struct {
	Name     string         `json:"name"`
	Checksum string         `json:"checksum,omitempty"`
	Owner    string         `json:"owner,omitempty"`
	Group    string         `json:"group,omitempty"`
	Mode     string         `json:"mode,omitempty"`
	Provider string         `json:"provider"`
	MTime    time.Time      `json:"mtime"`
	Size     int64          `json:"size"`
	Extended map[string]any `json:"extended,omitempty"`
}

// FileState is the state of a file resource.
type FileState struct {
	CommonState
	Metadata *FileMetadata `json:"metadata,omitempty"`
}

// ExecMetadata describes the command of an exec resource beyond the
// ExecState fields CCM defines.
type ExecMetadata struct {
	Name     string `json:"name"`
	Provider string `json:"provider"`
	// Output is the bounded combined output of the command when logoutput is set.
	Output string `json:"output,omitempty"`
	// LegacyExitCode and LegacyCreatesSatisfied are read from events of
	// agents (and history records) older than ExecState's top-level fields,
	// which kept them here as exit_code and creates_satisfied; they are
	// never written. Use ExecState.ExitCode and ExecState.CreatesSatisfied.
	LegacyExitCode         *int  `json:"exit_code,omitempty"`
	LegacyCreatesSatisfied *bool `json:"creates_satisfied,omitempty"`
}

// ExecState is the state of an exec resource. ExitCode and CreatesSatisfied
// sit at the top of the document under the names CCM uses (exitcode,
// creates_satisfied), so CCM event consumers read them unchanged.
type ExecState struct {
	CommonState
	// ExitCode is the exit code of the command run by this apply, nil when
	// it did not run.
	ExitCode *int `json:"exitcode,omitempty"`
	// CreatesSatisfied is true when the creates file exists.
	CreatesSatisfied bool          `json:"creates_satisfied,omitempty"`
	Metadata         *ExecMetadata `json:"metadata,omitempty"`
}

// PackageMetadata describes an installed (or absent) package.
type PackageMetadata struct {
	Name        string         `json:"name"`
	Version     string         `json:"version,omitempty"`
	Arch        string         `json:"arch,omitempty"`
	License     string         `json:"license,omitempty"`
	URL         string         `json:"url,omitempty"`
	Summary     string         `json:"summary,omitempty"`
	Description string         `json:"description,omitempty"`
	Provider    string         `json:"provider"`
	Extended    map[string]any `json:"extended,omitempty"`
}

// PackageState is the state of a package resource; Ensure holds the
// installed version, or "absent".
type PackageState struct {
	CommonState
	Metadata *PackageMetadata `json:"metadata,omitempty"`
}

// ServiceMetadata describes a system service.
type ServiceMetadata struct {
	Name     string `json:"name"`
	Provider string `json:"provider"`
	Enabled  bool   `json:"enabled"`
	Running  bool   `json:"running"`
	// Masked is true when the init system refuses to start or enable the
	// service until it is unmasked (systemd: is-enabled says masked or
	// masked-runtime); a masked service is not enabled.
	Masked bool `json:"masked,omitempty"`
}

// ServiceState is the state of a service resource; Ensure is "running" or "stopped".
type ServiceState struct {
	CommonState
	Metadata *ServiceMetadata `json:"metadata,omitempty"`
}

// ArchiveMetadata describes a downloaded archive and its extraction marker.
type ArchiveMetadata struct {
	Name          string    `json:"name"`
	Checksum      string    `json:"checksum,omitempty"`
	ArchiveExists bool      `json:"archive_exists"`
	CreatesExists bool      `json:"creates_exists"`
	Owner         string    `json:"owner,omitempty"`
	Group         string    `json:"group,omitempty"`
	MTime         time.Time `json:"mtime"`
	Size          int64     `json:"size"`
	Provider      string    `json:"provider"`
}

// ArchiveState is the state of an archive resource.
type ArchiveState struct {
	CommonState
	Metadata *ArchiveMetadata `json:"metadata,omitempty"`
}

// ScaffoldMetadata lists the files a scaffold render touches.
type ScaffoldMetadata struct {
	Name         string   `json:"name"`
	Provider     string   `json:"provider"`
	TargetExists bool     `json:"target_exists"`
	Changed      []string `json:"changed"`
	Purged       []string `json:"purged"`
	Stable       []string `json:"stable"`
	Engine       string   `json:"engine"`
}

// ScaffoldState is the state of a scaffold resource.
type ScaffoldState struct {
	CommonState
	Metadata *ScaffoldMetadata `json:"metadata,omitempty"`
}

// UserMetadata describes a user account as the system reads it (getent):
// never its password hash, only whether it has one.
type UserMetadata struct {
	Name     string `json:"name"`
	Provider string `json:"provider"`
	// UID and GID are nil for an account that does not exist.
	UID *int64 `json:"uid,omitempty"`
	GID *int64 `json:"gid,omitempty"`
	// Group is the primary group's name, "" when no group has the gid.
	Group   string   `json:"group,omitempty"`
	Groups  []string `json:"groups"`
	Home    string   `json:"home,omitempty"`
	Shell   string   `json:"shell,omitempty"`
	Comment string   `json:"comment,omitempty"`
	// Expiry is the account's expiry date (YYYY-MM-DD) or "never".
	Expiry string `json:"expiry,omitempty"`
	Locked bool   `json:"locked"`
	// PasswordSet says the account has a password hash; the hash itself
	// never leaves the host.
	PasswordSet bool `json:"password_set"`
}

// UserState is the state of a user resource; Ensure is "present" or "absent".
type UserState struct {
	CommonState
	Metadata *UserMetadata `json:"metadata,omitempty"`
}

// GroupMetadata describes a group as the system reads it (getent).
type GroupMetadata struct {
	Name     string `json:"name"`
	Provider string `json:"provider"`
	// GID is nil for a group that does not exist.
	GID     *int64   `json:"gid,omitempty"`
	Members []string `json:"members"`
}

// GroupState is the state of a group resource; Ensure is "present" or "absent".
type GroupState struct {
	CommonState
	Metadata *GroupMetadata `json:"metadata,omitempty"`
}

// stateDocs makes, per resource type name, the empty state document of
// that type.
var stateDocs = map[string]func() State{
	TypeFile:     func() State { return &FileState{} },
	TypeExec:     func() State { return &ExecState{} },
	TypePackage:  func() State { return &PackageState{} },
	TypeService:  func() State { return &ServiceState{} },
	TypeArchive:  func() State { return &ArchiveState{} },
	TypeScaffold: func() State { return &ScaffoldState{} },
	TypeApply:    func() State { return &ApplyState{} },
	TypeUser:     func() State { return &UserState{} },
	TypeGroup:    func() State { return &GroupState{} },
}

// NewState returns an empty state document for typeName, for decoding.
func NewState(typeName string) (State, error) {
	doc, ok := stateDocs[typeName]
	if !ok {
		return nil, badRequest("unknown resource type %q", typeName)
	}
	return doc(), nil
}

// DecodeState decodes a state document of typeName.
func DecodeState(typeName string, data []byte) (State, error) {
	st, err := NewState(typeName)
	if err != nil {
		return nil, err
	}
	if err := DecodeJSONStrict(data, st); err != nil {
		return nil, err
	}
	return st, nil
}
