package shadow

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/grouptype"
	"github.com/ccm-fleet/ccm/resources/usertype"
)

// UserProviderName is the user provider's name, as used in provider:.
const UserProviderName = "useradd"

// UserFactory makes useradd providers.
type UserFactory struct{ factory }

var _ resources.Factory = (*UserFactory)(nil)

// NewUserFactory returns a factory whose providers run the tools through
// r, serialised on lock (shared with the group factory), and log to log
// (nil discards). Its providers are manageable where getent, useradd,
// usermod, userdel and chpasswd are in SearchPath.
func NewUserFactory(r runner.Runner, log *slog.Logger, lock *sync.Mutex) *UserFactory {
	return &UserFactory{newFactory(r, log, lock, protocol.TypeUser, UserProviderName,
		func(t tools) resources.Provider { return &User{tools: t} },
		"getent", "useradd", "usermod", "userdel", "chpasswd")}
}

// User manages accounts with useradd, usermod, userdel and chpasswd.
type User struct {
	tools tools
}

var _ usertype.Provider = (*User)(nil)

// Name returns "useradd".
func (u *User) Name() string { return UserProviderName }

// Status reads getent passwd NAME, getent shadow NAME, the primary
// group's name (getent group GID) and the supplementary groups (getent
// initgroups NAME, then getent group of their ids).
func (u *User) Status(ctx context.Context, user string) (*protocol.UserState, error) {
	if err := grouptype.ValidateName("name", user); err != nil {
		return nil, err
	}
	out, found, err := u.tools.getent(ctx, "passwd", user)
	if err != nil {
		return nil, err
	}
	meta := &protocol.UserMetadata{Name: user, Provider: UserProviderName, Groups: []string{}}
	if !found {
		return &protocol.UserState{CommonState: protocol.NewCommonState(protocol.TypeUser, user, grouptype.EnsureAbsent), Metadata: meta}, nil
	}
	pw, err := parsePasswd(out)
	if err != nil {
		return nil, err
	}
	meta.UID, meta.GID, meta.Home, meta.Shell, meta.Comment = &pw.uid, &pw.gid, pw.home, pw.shell, pw.gecos
	if meta.Group, err = groupByID(ctx, u.tools, pw.gid); err != nil {
		return nil, err
	}
	sh, err := u.shadow(ctx, user)
	if err != nil {
		return nil, err
	}
	meta.Locked, meta.Expiry, meta.PasswordSet = sh.locked, sh.expiry, sh.hash != ""
	if meta.Groups, err = u.groups(ctx, user); err != nil {
		return nil, err
	}
	return &protocol.UserState{CommonState: protocol.NewCommonState(protocol.TypeUser, user, grouptype.EnsurePresent), Metadata: meta}, nil
}

// shadow reads getent shadow NAME; an account without a shadow entry has
// no hash and never expires.
func (u *User) shadow(ctx context.Context, user string) (shadowEntry, error) {
	out, found, err := u.tools.getent(ctx, "shadow", user)
	if err != nil {
		return shadowEntry{}, err
	}
	if !found {
		return shadowEntry{expiry: usertype.ExpiryNever}, nil
	}
	return parseShadow(out)
}

// groups are the names of the user's supplementary groups.
func (u *User) groups(ctx context.Context, user string) ([]string, error) {
	out, _, err := u.tools.getent(ctx, "initgroups", user)
	if err != nil {
		return nil, err
	}
	ids := strings.Fields(out)
	if len(ids) <= 1 {
		return []string{}, nil
	}
	out, _, err = u.tools.getent(ctx, "group", ids[1:]...)
	if err != nil {
		return nil, err
	}
	entries, err := parseGroups(out)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.name)
	}
	return names, nil
}

// PasswordHash reads the hash from getent shadow NAME.
func (u *User) PasswordHash(ctx context.Context, user string) (string, error) {
	sh, err := u.shadow(ctx, user)
	return sh.hash, err
}

// UserByID runs getent passwd UID.
func (u *User) UserByID(ctx context.Context, uid int64) (string, error) {
	out, found, err := u.tools.getent(ctx, "passwd", strconv.FormatInt(uid, 10))
	if err != nil || !found {
		return "", err
	}
	pw, err := parsePasswd(strings.SplitN(out, "\n", 2)[0])
	if err != nil {
		return "", err
	}
	return pw.name, nil
}

// Create runs useradd with the attributes p sets: -u, -g, -G, -d with -m
// (manage_home) or -M, -s, -c, -r, -e.
func (u *User) Create(ctx context.Context, p *usertype.Properties) error {
	var args []string
	if p.UID != nil {
		args = append(args, "-u", strconv.FormatInt(p.UID.Int(), 10))
	}
	if p.GID != nil {
		args = append(args, "-g", strconv.FormatInt(p.GID.Int(), 10))
	} else if p.Group != "" {
		args = append(args, "-g", p.Group)
	}
	if len(p.Groups) > 0 {
		args = append(args, "-G", strings.Join(p.Groups, ","))
	}
	if p.Home != "" {
		args = append(args, "-d", p.Home)
	}
	if p.ManageHome {
		args = append(args, "-m")
	} else {
		args = append(args, "-M")
	}
	if p.Shell != "" {
		args = append(args, "-s", p.Shell)
	}
	if p.Comment != nil {
		args = append(args, "-c", *p.Comment)
	}
	if p.System {
		args = append(args, "-r")
	}
	if p.Expiry != "" && p.Expiry != usertype.ExpiryNever {
		args = append(args, "-e", p.Expiry)
	}
	return u.tools.change(ctx, nil, "useradd", append(args, "--", p.Name)...)
}

// Modify runs usermod with the flag of the attribute: -u, -g, -G (-a to
// append), -d (-m to move), -s, -c, -e ("" for never), -L or -U.
func (u *User) Modify(ctx context.Context, user string, c usertype.Change) error {
	var args []string
	switch c.Attribute {
	case usertype.AttrUID:
		args = []string{"-u", c.Value}
	case usertype.AttrGroup:
		args = []string{"-g", c.Value}
	case usertype.AttrGroups:
		if c.Append {
			args = append(args, "-a")
		}
		args = append(args, "-G", strings.Join(c.Groups, ","))
	case usertype.AttrHome:
		args = []string{"-d", c.Value}
		if c.MoveHome {
			args = append(args, "-m")
		}
	case usertype.AttrShell:
		args = []string{"-s", c.Value}
	case usertype.AttrComment:
		args = []string{"-c", c.Value}
	case usertype.AttrExpiry:
		args = []string{"-e", strings.TrimPrefix(c.Value, usertype.ExpiryNever)}
	case usertype.AttrLocked:
		args = []string{"-U"}
		if c.Value == "true" {
			args = []string{"-L"}
		}
	default:
		return fmt.Errorf("usermod: unknown attribute %q", c.Attribute)
	}
	return u.tools.change(ctx, nil, "usermod", append(args, "--", user)...)
}

// SetPassword runs chpasswd -e with NAME:HASH on its standard input.
func (u *User) SetPassword(ctx context.Context, user, hash string) error {
	return u.tools.change(ctx, []byte(user+":"+hash+"\n"), "chpasswd", "-e")
}

// Delete runs userdel [-r] -- NAME.
func (u *User) Delete(ctx context.Context, user string, removeHome bool) error {
	args := []string{"--", user}
	if removeHome {
		args = append([]string{"-r"}, args...)
	}
	return u.tools.change(ctx, nil, "userdel", args...)
}
