package usertype

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/grouptype"
)

// ExpiryNever is the expiry value of an account that never expires.
const ExpiryNever = "never"

// MaxText bounds home, shell, comment and password, in bytes.
const MaxText = 1024

// hashRe is what a crypt(3) hash looks like: $id$, then salt and hash
// characters (yescrypt's $y$j9T$salt$hash, SHA-512's $6$rounds=N$salt$hash).
var hashRe = regexp.MustCompile(`^\$[0-9a-z]{1,3}\$[A-Za-z0-9./=,$]{8,}$`)

// Properties are the properties of a user resource; Name is the account's
// name. Every attribute left out is left as it is.
type Properties struct {
	resources.CommonProperties
	// UID is the user's id.
	UID *grouptype.ID `json:"uid,omitempty"`
	// GID is the primary group's id; Group names it instead (a name or a
	// number); at most one of them.
	GID   *grouptype.ID `json:"gid,omitempty"`
	Group string        `json:"group,omitempty"`
	// Groups are supplementary groups; nil leaves them alone.
	Groups []string `json:"groups,omitempty"`
	// Membership is minimum (the default: add Groups, keep others) or
	// inclusive (exactly Groups).
	Membership string `json:"membership,omitempty"`
	// Home is the home directory.
	Home string `json:"home,omitempty"`
	// ManageHome creates the home with the account (and moves it when
	// home changes) and removes it with the account.
	ManageHome bool `json:"manage_home,omitempty"`
	// Shell is the login shell.
	Shell string `json:"shell,omitempty"`
	// Comment is the GECOS field.
	Comment *string `json:"comment,omitempty"`
	// System makes a new account in the system range, without password
	// aging; an existing account is left where it is.
	System bool `json:"system,omitempty"`
	// Password is a crypt(3) hash, never a clear text. It never leaves
	// the host (Secrets).
	Password string `json:"password,omitempty"`
	// Expiry is a date (YYYY-MM-DD) or "never".
	Expiry string `json:"expiry,omitempty"`
	// Locked locks (true) or unlocks (false) the password; nil leaves it.
	Locked *bool `json:"locked,omitempty"`
}

var (
	_ resources.Properties   = (*Properties)(nil)
	_ resources.SecretHolder = (*Properties)(nil)
)

// Secrets returns the password property and its hash: a user with a
// password is sensitive whatever its sensitive property says.
func (p *Properties) Secrets() (properties, values []string) {
	if p.Password == "" {
		return nil, nil
	}
	return []string{"password"}, []string{p.Password}
}

// Validate sets the defaults (ensure present, membership minimum), then
// checks every property. Failures wrap resources.ErrInvalid and name the
// property; a bad password is never quoted.
func (p *Properties) Validate() error {
	if p.Ensure == "" {
		p.Ensure = grouptype.EnsurePresent
	}
	if p.Password != "" {
		p.Sensitive = true
	}
	if err := p.ValidateCommon(); err != nil {
		return err
	}
	if err := grouptype.ValidateEnsure(p.Ensure); err != nil {
		return err
	}
	if err := grouptype.ValidateName("name", p.Name); err != nil {
		return err
	}
	if err := p.validateIDs(); err != nil {
		return err
	}
	if err := grouptype.ValidateNames("groups", p.Groups); err != nil {
		return err
	}
	if err := grouptype.ValidateMembership(&p.Membership); err != nil {
		return err
	}
	if err := p.validateTexts(); err != nil {
		return err
	}
	return p.validateSecret()
}

func (p *Properties) validateIDs() error {
	if err := grouptype.ValidateID("uid", p.UID); err != nil {
		return err
	}
	if err := grouptype.ValidateID("gid", p.GID); err != nil {
		return err
	}
	if p.GID != nil && p.Group != "" {
		return resources.Invalidf("properties gid and group both name the primary group: give one")
	}
	if p.Group == "" {
		return nil
	}
	if id, err := strconv.ParseInt(p.Group, 10, 64); err == nil {
		gid := grouptype.ID(id)
		return grouptype.ValidateID("group", &gid)
	}
	return grouptype.ValidateName("group", p.Group)
}

// validateTexts checks the values that end up in the account files: no
// ':' (their field separator), newline or NUL, home and shell absolute.
func (p *Properties) validateTexts() error {
	for _, f := range []struct {
		name, value string
		path        bool
	}{{"home", p.Home, true}, {"shell", p.Shell, true}, {"comment", deref(p.Comment), false}} {
		switch {
		case f.value == "":
		case len(f.value) > MaxText:
			return resources.InvalidField(f.name, "is longer than %d bytes", MaxText)
		case strings.ContainsAny(f.value, ":\n\r\x00"):
			return resources.InvalidField(f.name, "%.60q holds ':', a newline or NUL, which an account file cannot", f.value)
		case f.path && !strings.HasPrefix(f.value, "/"):
			return resources.InvalidField(f.name, "%.60q is not an absolute path", f.value)
		}
	}
	if p.ManageHome && p.Home == "" {
		// The home created or removed is named, so policies can judge it.
		return resources.InvalidFieldPredicate("home", "is required with manage_home")
	}
	return nil
}

// validateSecret checks the password (never quoting it) and the expiry.
func (p *Properties) validateSecret() error {
	if p.Password != "" && (len(p.Password) > MaxText || !hashRe.MatchString(p.Password)) {
		return resources.InvalidField("password", "is not a crypt(3) hash such as $6$salt$hash or $y$j9T$salt$hash (a clear-text password is never accepted; make one with mkpasswd or openssl passwd -6)")
	}
	if p.Expiry != "" && p.Expiry != ExpiryNever {
		if _, err := time.Parse(time.DateOnly, p.Expiry); err != nil {
			return resources.InvalidField("expiry", "%.40q is not a date such as 2030-12-31, nor never", p.Expiry)
		}
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Redaction replaces the password hash in recorded properties.
const Redaction = "[redacted]"

// Redacted returns a copy of the properties safe to record in events:
// the password hash replaced by Redaction. The receiver is not modified.
func (p *Properties) Redacted() any {
	c := *p
	if c.Password != "" {
		c.Password = Redaction
	}
	return &c
}
