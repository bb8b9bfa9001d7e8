package shadow

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/grouptype"
)

// GroupProviderName is the group provider's name, as used in provider:.
const GroupProviderName = "groupadd"

// Priority is the selection priority of both providers when manageable
// (lower numbers win).
const Priority = 1

// GroupFactory makes groupadd providers.
type GroupFactory struct{ factory }

var _ resources.Factory = (*GroupFactory)(nil)

// NewGroupFactory returns a factory whose providers run the tools through
// r, serialised on lock (shared with the user factory: both change the
// same files), and log to log (nil discards). Its providers are
// manageable where getent, groupadd, groupmod, groupdel and gpasswd are
// in SearchPath.
func NewGroupFactory(r runner.Runner, log *slog.Logger, lock *sync.Mutex) *GroupFactory {
	return &GroupFactory{newFactory(r, log, lock, protocol.TypeGroup, GroupProviderName,
		func(t tools) resources.Provider { return &Group{tools: t} },
		"getent", "groupadd", "groupmod", "groupdel", "gpasswd")}
}

// Group manages groups with groupadd, groupmod, groupdel and gpasswd.
type Group struct {
	tools tools
}

var _ grouptype.Provider = (*Group)(nil)

// Name returns "groupadd".
func (g *Group) Name() string { return GroupProviderName }

// Status runs getent group NAME.
func (g *Group) Status(ctx context.Context, group string) (*protocol.GroupState, error) {
	if err := grouptype.ValidateName("name", group); err != nil {
		return nil, err
	}
	out, found, err := g.tools.getent(ctx, "group", group)
	if err != nil {
		return nil, err
	}
	meta := &protocol.GroupMetadata{Name: group, Provider: GroupProviderName, Members: []string{}}
	if !found {
		return &protocol.GroupState{CommonState: protocol.NewCommonState(protocol.TypeGroup, group, grouptype.EnsureAbsent), Metadata: meta}, nil
	}
	entries, err := parseGroups(out)
	if err != nil {
		return nil, err
	}
	if len(entries) > 0 {
		meta.GID, meta.Members = &entries[0].gid, entries[0].members
	}
	return &protocol.GroupState{CommonState: protocol.NewCommonState(protocol.TypeGroup, group, grouptype.EnsurePresent), Metadata: meta}, nil
}

// GroupByID runs getent group GID.
func (g *Group) GroupByID(ctx context.Context, gid int64) (string, error) {
	return groupByID(ctx, g.tools, gid)
}

func groupByID(ctx context.Context, t tools, gid int64) (string, error) {
	out, found, err := t.getent(ctx, "group", strconv.FormatInt(gid, 10))
	if err != nil || !found {
		return "", err
	}
	entries, err := parseGroups(out)
	if err != nil || len(entries) == 0 {
		return "", err
	}
	return entries[0].name, nil
}

// Create runs groupadd [-g GID] [-r] -- NAME.
func (g *Group) Create(ctx context.Context, group string, gid *grouptype.ID, system bool) error {
	var args []string
	if gid != nil {
		args = append(args, "-g", strconv.FormatInt(gid.Int(), 10))
	}
	if system {
		args = append(args, "-r")
	}
	return g.tools.change(ctx, nil, "groupadd", append(args, "--", group)...)
}

// SetGID runs groupmod -g GID -- NAME.
func (g *Group) SetGID(ctx context.Context, group string, gid int64) error {
	return g.tools.change(ctx, nil, "groupmod", "-g", strconv.FormatInt(gid, 10), "--", group)
}

// SetMembers runs gpasswd -M a,b -- NAME (an empty list removes every
// member).
func (g *Group) SetMembers(ctx context.Context, group string, members []string) error {
	return g.tools.change(ctx, nil, "gpasswd", "-M", strings.Join(members, ","), "--", group)
}

// Delete runs groupdel -- NAME.
func (g *Group) Delete(ctx context.Context, group string) error {
	return g.tools.change(ctx, nil, "groupdel", "--", group)
}
