package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ccm-fleet/ccm/internal/filecheck"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources/catalog"
	"github.com/ccm-fleet/ccm/trust/scope"
)

// ErrPolicy is wrapped by every error loading or validating a policy.
var ErrPolicy = errors.New("invalid agent policy")

// Policy bounds.
const (
	// DefaultMaxClockSkew is how far a request's created time may be ahead
	// of the agent's clock, and how long past its deadline it is still
	// taken, when the policy does not say.
	DefaultMaxClockSkew = 30 * time.Second
	// MaxMaxClockSkew is the largest max_clock_skew accepted.
	MaxMaxClockSkew = time.Hour
	// MaxSigners bounds the signers of one policy.
	MaxSigners = 1000
	// MaxPolicyBytes bounds a policy file.
	MaxPolicyBytes = 1 << 20
)

// Policy says which signed requests an agent executes: those signed by one
// of Signers, for the resource types that signer is allowed. Insecure
// accepts unsigned requests from anyone (demos and tests only).
type Policy struct {
	// Insecure accepts unsigned requests and lets them use every type.
	Insecure bool `json:"insecure" yaml:"insecure"`
	// MaxClockSkew is how far the agent's clock and the orchestrator's may
	// differ; default 30s, at most 1h.
	MaxClockSkew time.Duration `json:"max_clock_skew" yaml:"max_clock_skew"`
	// Signers are the trusted keys.
	Signers []Signer `json:"signers" yaml:"signers"`
	// Registration lists the services this host's own (local, unsigned)
	// manifests may register; none without it (see
	// Policy.CheckLocalRegistration).
	Registration *RegistrationScope `json:"registration,omitempty" yaml:"registration"`
}

// Signer is one trusted key and what it may do.
type Signer struct {
	// Name names the signer in the audit log and in messages.
	Name string `json:"name" yaml:"name"`
	// PublicKey is the signer's nkeys user public key ("U...").
	PublicKey string `json:"public_key" yaml:"public_key"`
	// Allow lists the resource types the signer may use; exec must be
	// listed to run commands.
	Allow []string `json:"allow" yaml:"allow"`
	// Shell allows exec resources with the shell provider.
	Shell bool `json:"shell" yaml:"shell"`
	// NoopOnly allows only noop requests.
	NoopOnly bool `json:"noop_only" yaml:"noop_only"`
	// AssignmentsAdmin lets the signer replace or remove any assignment;
	// without it a signer may replace or remove only the assignments it
	// stored itself (agents keep who that is per name).
	AssignmentsAdmin bool `json:"assignments_admin" yaml:"assignments_admin"`
	// Rules are the signer's scopes (hosts, exec, file, package,
	// service, net), written beside allow: once one is set for a type, only
	// what it describes is allowed (see package scope).
	scope.Rules
	// Deny are rules of the same shapes that refuse what they describe,
	// whatever the scopes allow.
	Deny *scope.Rules `json:"deny,omitempty" yaml:"deny"`
	// Registration lists the services the signer's manifests may make a
	// host register; none without it.
	Registration *RegistrationScope `json:"registration,omitempty" yaml:"registration"`

	// scope is Rules and Deny compiled by Validate; nil without any.
	scope *scope.Scope
}

// LoadPolicy reads and validates a policy file (YAML or JSON, decoded by
// protocol.DecodeConfig: exact keys, unknown keys, duplicate keys, anchors
// and invalid UTF-8 are errors). Every error wraps ErrPolicy and reads
// `policy PATH: problem`, e.g. `policy /etc/ccm/policy.yaml: signers[0]:
// unknown key "colour"`.
func LoadPolicy(path string) (*Policy, error) {
	data, err := filecheck.ReadBounded(path, MaxPolicyBytes)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", path, filecheck.Wrap(ErrPolicy, err))
	}
	p, err := ParsePolicy(data)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", path, err)
	}
	return p, nil
}

// ParsePolicy strictly decodes and validates a YAML or JSON policy,
// filling in defaults. Errors wrap ErrPolicy and name the key as written
// (`signers[0]: unknown key "colour"`).
func ParsePolicy(data []byte) (*Policy, error) {
	var p Policy
	if _, err := protocol.DecodeConfig(data, &p, protocol.Limits{MaxBytes: MaxPolicyBytes}); err != nil {
		return nil, filecheck.Decode(ErrPolicy, err)
	}
	if p.MaxClockSkew == 0 {
		p.MaxClockSkew = DefaultMaxClockSkew
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// Validate checks the policy: unique names and keys, keys that are user
// public keys, known types, a bounded clock skew, and each signer's scopes
// (see scope.Compile: a rule that does not parse, a scope for a type the
// signer is not allowed, an allow entry a deny entry shadows), which it
// compiles.
func (p *Policy) Validate() error {
	if p.MaxClockSkew < 0 || p.MaxClockSkew > MaxMaxClockSkew {
		return invalid("max_clock_skew %s must be between 0 and %s", p.MaxClockSkew, MaxMaxClockSkew)
	}
	if len(p.Signers) > MaxSigners {
		return invalid("signers: %d, the limit is %d", len(p.Signers), MaxSigners)
	}
	if err := p.Registration.validate(); err != nil {
		return invalid("%v", err)
	}
	names := map[string]int{}
	keys := map[string]int{}
	for i := range p.Signers {
		s := &p.Signers[i]
		where, err := s.validateIdentity(i, names, keys)
		if err != nil {
			return err
		}
		if err := s.validateRights(where); err != nil {
			return err
		}
		var opts []scope.Option
		if s.NoopOnly {
			opts = append(opts, scope.NoopOnly())
		}
		sc, err := scope.Compile(&s.Rules, s.Deny, s.Allow, opts...)
		if err != nil {
			return invalid("%s: %s", where, ruleDetail(err))
		}
		s.scope = sc
	}
	return nil
}

// invalid is an error about the policy, wrapping ErrPolicy.
func invalid(format string, args ...any) error {
	return &filecheck.Error{Msg: fmt.Sprintf(format, args...), Sentinel: ErrPolicy}
}

// validateIdentity checks signer i's name and public key, neither used by
// an earlier signer (names and keys map those seen to their index), and
// returns how errors about it name it: `signers[1] deploy`.
func (s *Signer) validateIdentity(i int, names, keys map[string]int) (string, error) {
	where := fmt.Sprintf("signers[%d]", i)
	if s.Name == "" {
		return "", invalid("%s: name is required", where)
	}
	if err := protocol.ValidateIdentity(s.Name); err != nil {
		return "", invalid("%s: name %.60q: use letters, digits, '.', '-' and '_'", where, s.Name)
	}
	where = fmt.Sprintf("signers[%d] %s", i, s.Name)
	if j, dup := names[s.Name]; dup {
		return "", invalid("%s: name is also the name of signers[%d]", where, j)
	}
	names[s.Name] = i
	if _, err := protocol.ParseUserKey(s.PublicKey); err != nil {
		return "", invalid("%s: public_key: %s", where, signerDetail(err))
	}
	if j, dup := keys[s.PublicKey]; dup {
		return "", invalid("%s: public_key is also the key of signers[%d]", where, j)
	}
	keys[s.PublicKey] = i
	return where, nil
}

// validateRights checks what the signer (named where) may do: known
// types in allow, shell only with a type that runs one, assignments_admin
// not with noop_only, and its registration scope.
func (s *Signer) validateRights(where string) error {
	if len(s.Allow) == 0 {
		return invalid("%s: allow must list at least one resource type (%s)", where, strings.Join(protocol.Types, ", "))
	}
	for _, t := range s.Allow {
		if !slices.Contains(protocol.Types, t) {
			return invalid("%s: allow: unknown resource type %.40q (known: %s)", where, t, strings.Join(protocol.Types, ", "))
		}
	}
	if shells := catalog.ShellTypes(); s.Shell && !slices.ContainsFunc(s.Allow, func(t string) bool { return slices.Contains(shells, t) }) {
		return invalid("%s: shell: true needs %s in allow", where, strings.Join(shells, " or "))
	}
	if s.AssignmentsAdmin && s.NoopOnly {
		return invalid("%s: assignments_admin: true cannot go with noop_only: true (replacing or removing another signer's assignment changes what hosts run)", where)
	}
	if err := s.Registration.validate(); err != nil {
		return invalid("%s: %v", where, err)
	}
	if s.Registration != nil && len(s.Registration.Publishers) > 0 {
		return invalid("%s: registration.publishers is the policy's own (top level), not a signer's", where)
	}
	return nil
}

// SignerByKey returns the trusted signer with public key pub; a nil
// policy has none.
func (p *Policy) SignerByKey(pub string) (*Signer, bool) {
	if p == nil {
		return nil, false
	}
	for i := range p.Signers {
		if p.Signers[i].PublicKey == pub {
			return &p.Signers[i], true
		}
	}
	return nil, false
}

// Skew is the policy's clock skew (the default without a policy).
func (p *Policy) Skew() time.Duration {
	if p == nil || p.MaxClockSkew == 0 {
		return DefaultMaxClockSkew
	}
	return p.MaxClockSkew
}

// Resource is one resource of a request as the policy sees it.
type Resource struct {
	Type string
	Name string
	// Provider is the literal provider asked for, "" when none, "*" when
	// it cannot be known before templates are expanded.
	Provider string
}

// Ref is the resource's type#name.
func (r Resource) Ref() string { return r.Type + "#" + r.Name }

// Allows checks that signer s may apply every resource of a request as
// parsed (noop says whether it is a dry run): noop_only, each literal
// type and exec provider. A refusal names the first resource and the rule
// that refuses it.
func (s *Signer) Allows(resources []Resource, noop bool) (Refusal, bool) {
	if s.NoopOnly && !noop {
		return Refusal{Msg: fmt.Sprintf("signer %s may only send noop requests (noop_only)", s.Name), Rule: "noop_only: true", Value: "noop: false"}, false
	}
	for _, r := range resources {
		if ref, ok := s.AllowsResource(r); !ok {
			return ref, false
		}
	}
	return Refusal{}, true
}

// Refusal is why the policy refuses a request: the message of the
// reply, and the rule and value the audit line names.
type Refusal struct {
	Msg, Rule, Value string
}

// AllowsResource checks one resource: its type must be allowed, and an
// exec resource may use a provider other than posix only with shell: true
// (an unknown provider, "*", counts as other).
func (s *Signer) AllowsResource(r Resource) (Refusal, bool) {
	if !slices.Contains(s.Allow, r.Type) {
		return Refusal{
			Msg:  fmt.Sprintf("%s: signer %s is not allowed resource type %s (allow: %s)", r.Ref(), s.Name, r.Type, strings.Join(s.Allow, ", ")),
			Rule: "allow [" + strings.Join(s.Allow, ", ") + "]", Value: r.Type,
		}, false
	}
	if catalog.NeedsShell(r.Type, r.Provider) && !s.Shell {
		return Refusal{
			Msg:  fmt.Sprintf("%s: signer %s is not allowed the shell provider (shell: false)", r.Ref(), s.Name),
			Rule: "shell: false", Value: r.Provider,
		}, false
	}
	return Refusal{}, true
}

// signerDetail is what is wrong with a signer's key, without the words of
// protocol.ErrSigner: the policy names the key itself.
func signerDetail(err error) string {
	var se *protocol.SignerError
	if errors.As(err, &se) {
		return se.Detail
	}
	return err.Error()
}

// ruleDetail is the rule and its problem, without the words of
// scope.ErrRule: the policy names the signer itself.
func ruleDetail(err error) string {
	var re *scope.RuleError
	if errors.As(err, &re) {
		return re.Detail
	}
	return err.Error()
}
