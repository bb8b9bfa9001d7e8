package broker

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
)

// internalUser is the user the broker's own in-process connection (which
// provisions the history stream and the registry) authenticates as when an
// auth file is in use. It accepts in-process connections only, so it cannot
// be used over the network whatever its password.
const internalUser = "ccm-broker-internal"

// newInternalPassword returns a random password for internalUser.
func newInternalPassword() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("broker: internal password: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// applyAuth sets the users of a onto opts, plus the broker's in-process
// user with password internalPassword.
func applyAuth(opts *server.Options, a *AuthFile, internalPassword string) {
	opts.Users = []*server.User{{
		Username:               internalUser,
		Password:               internalPassword,
		AllowedConnectionTypes: map[string]struct{}{jwt.ConnectionTypeInProcess: {}},
	}}
	opts.Nkeys = nil
	for _, u := range a.Users {
		perms := u.Permissions.server()
		if u.NKey != "" {
			opts.Nkeys = append(opts.Nkeys, &server.NkeyUser{Nkey: u.NKey, Permissions: perms})
			continue
		}
		opts.Users = append(opts.Users, &server.User{Username: u.User, Password: u.Password, Permissions: perms})
	}
}

// server converts the permissions to nats-server's; nil stays nil (no
// restriction).
func (p *AuthPermissions) server() *server.Permissions {
	if p == nil {
		return nil
	}
	sp := &server.Permissions{Publish: p.Publish.server(), Subscribe: p.Subscribe.server()}
	if r := p.AllowResponses; r != nil && r.Enabled {
		max, expires := r.Max, r.Expires
		if max == 0 {
			max = server.DEFAULT_ALLOW_RESPONSE_MAX_MSGS
		}
		if expires == 0 {
			expires = server.DEFAULT_ALLOW_RESPONSE_EXPIRATION
		}
		sp.Response = &server.ResponsePermission{MaxMsgs: max, Expires: expires}
		// Like nats-server's configuration parser: responses alone do not
		// open publishing to everything.
		if sp.Publish == nil {
			sp.Publish = &server.SubjectPermission{}
		}
		if sp.Publish.Allow == nil {
			sp.Publish.Allow = []string{}
		}
	}
	return sp
}

func (r *SubjectRules) server() *server.SubjectPermission {
	if r == nil {
		return nil
	}
	return &server.SubjectPermission{Allow: r.Allow, Deny: r.Deny}
}
