package broker

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/registration"
)

// DefaultHubDomain is the JetStream domain of a hub whose Config.Domain is
// empty.
const DefaultHubDomain = "hub"

// SiteLocalSubjects are the subjects that never cross a leaf connection
// between a site broker and the hub: the history records, the node
// registry entries and the assignment bucket's republished changes. Each
// site keeps the first two in its own JetStream domain and the hub sources
// them from there; were they to cross, the hub's stream would also capture
// a site's records directly (subject interest crosses leaf nodes) and hold
// them twice. The changes are those of the domain's own bucket, numbered
// by its own sequence: agents follow the bucket of the domain they read.
var SiteLocalSubjects = []string{"ccm.v1.history.>", "$KV.CCM_NODES.>", protocol.AssignmentChangeSubjects}

// LeafNodesConfig is the hub side of the sites topology: where site
// brokers connect as leaf nodes, how they authenticate and which sites the
// hub's history and registry gather. Off while Listen is empty.
type LeafNodesConfig struct {
	// Listen is the host:port site brokers connect to (nats-server's leaf
	// node port, conventionally 7422); port 0 or -1 picks a free port.
	Listen string `json:"listen" yaml:"listen"`

	// Users are the credentials site brokers authenticate with (one per
	// site is best, so a site can be shut out alone). At least one.
	Users []LeafUser `json:"users" yaml:"users"`

	// TLS is the certificate leaf connections are served with; off while
	// TLS.Cert is empty. With Verify, sites must present a certificate
	// signed by CA.
	TLS TLSConfig `json:"tls" yaml:"tls"`

	// Sites are the JetStream domains (site names) whose history stream
	// and node registry the hub's own source, so that the hub sees the
	// whole fleet. A site missing here works on its own but is not seen
	// at the hub.
	Sites []string `json:"sites" yaml:"sites"`
}

// LeafUser is one user a site broker authenticates to the hub as.
type LeafUser struct {
	// User is the user name.
	User string `json:"user" yaml:"user"`
	// Password is the plain password or its bcrypt hash ($2a$, …).
	Password string `json:"password" yaml:"password"`
}

// HubConfig is the site side: the hub this site broker connects to as a
// leaf node. Required with Config.Site.
type HubConfig struct {
	// URLs are the hub brokers' leaf node URLs (nats-leaf://, nats:// or
	// tls://host:port); the site connects to one and fails over to the
	// others. At least one.
	URLs []string `json:"urls" yaml:"urls"`

	// Domain is the hub's JetStream domain (its domain setting; default
	// hub): the site's assignment store mirrors the hub's from there.
	Domain string `json:"domain" yaml:"domain"`

	// User and Password authenticate the site to the hub (a user of the
	// hub's leafnodes.users). Both or neither.
	User     string `json:"user" yaml:"user"`
	Password string `json:"password" yaml:"password"`

	// TLS configures TLS to the hub: CA verifies the hub's certificate,
	// Cert and Key are the site's client certificate (when the hub
	// verifies). TLS is on when CA or Cert is set, or a URL is tls://.
	TLS HubTLSConfig `json:"tls" yaml:"tls"`
}

// HubTLSConfig names the PEM files of a site's TLS connection to the hub.
type HubTLSConfig struct {
	// CA is the file of certificate authorities the hub's certificate is
	// verified against.
	CA string `json:"ca" yaml:"ca"`
	// Cert is the site's client certificate file; Key its private key.
	Cert string `json:"cert" yaml:"cert"`
	Key  string `json:"key" yaml:"key"`
}

// enabled reports whether TLS to the hub is configured.
func (t HubTLSConfig) enabled() bool { return t.CA != "" || t.Cert != "" || t.Key != "" }

// domainPattern is what a site or domain name may be: one NATS subject
// token of letters, digits, - and _ (it names the JetStream domain, whose
// API lives at $JS.<domain>.API).
var domainPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// validDomain checks a site or domain name.
func validDomain(s string) error {
	if !domainPattern.MatchString(s) {
		return errors.New("not a NATS subject token: use 1 to 64 letters, digits, - or _")
	}
	return nil
}

// HubDomain is, for a site broker, the hub's JetStream domain (Hub.Domain,
// or DefaultHubDomain); empty for any other broker.
func (c Config) HubDomain() string {
	switch {
	case !c.IsSite():
		return ""
	case c.Hub.Domain != "":
		return c.Hub.Domain
	}
	return DefaultHubDomain
}

// IsSite reports whether the configuration is a site broker's.
func (c Config) IsSite() bool { return c.Site != "" }

// IsHub reports whether the configuration is a hub's (it accepts leaf
// connections from site brokers).
func (c Config) IsHub() bool { return c.LeafNodes.Listen != "" }

// JetStreamDomain is the JetStream domain the broker runs: the site name
// for a site broker, Domain (or DefaultHubDomain) for a hub, Domain (often
// empty) otherwise.
func (c Config) JetStreamDomain() string {
	switch {
	case c.IsSite():
		return c.Site
	case c.IsHub() && c.Domain == "":
		return DefaultHubDomain
	}
	return c.Domain
}

// validateSites adds every problem of the site and hub settings.
func (c Config) validateSites(add func(string, ...any)) {
	if c.Domain != "" {
		if err := validDomain(c.Domain); err != nil {
			add("domain %q: %v", c.Domain, err)
		}
		if c.IsSite() {
			add("domain: a site broker's JetStream domain is its site name; set site only")
		}
	}
	if c.IsSite() {
		if err := validDomain(c.Site); err != nil {
			add("site %q: %v", c.Site, err)
		}
		if c.IsHub() {
			add("site %s: a site broker cannot also be the hub (leafnodes.listen)", c.Site)
		}
		if len(c.Hub.URLs) == 0 {
			add("site %s: hub.urls is required (a site broker connects to the hub as a leaf node)", c.Site)
		}
		if d := c.Hub.Domain; d != "" {
			if err := validDomain(d); err != nil {
				add("hub.domain %q: %v", d, err)
			} else if d == c.Site {
				add("hub.domain %q: the hub's domain cannot be the site's own name", d)
			}
		}
	} else if len(c.Hub.URLs) > 0 || c.Hub.User != "" || c.Hub.TLS.enabled() || c.Hub.Domain != "" {
		add("hub: requires site (only a site broker connects to a hub)")
	}
	for i, u := range c.Hub.URLs {
		if _, err := parseLeafURL(u); err != nil {
			add("hub.urls[%d] %q: %v", i, redactURL(u), err)
		}
	}
	if (c.Hub.User == "") != (c.Hub.Password == "") {
		add("hub.user and hub.password: set both or neither")
	}
	if t := c.Hub.TLS; (t.Cert == "") != (t.Key == "") {
		add("hub.tls.cert and hub.tls.key: set both or neither")
	}

	l := c.LeafNodes
	if !c.IsHub() {
		if len(l.Users) > 0 || len(l.Sites) > 0 || l.TLS.Enabled() {
			add("leafnodes: leafnodes.listen is required to accept site brokers")
		}
		return
	}
	if _, _, err := parseListen(l.Listen); err != nil {
		add("leafnodes.listen %q: %v", l.Listen, err)
	}
	if len(l.Users) == 0 {
		add("leafnodes.users: at least one user is required (site brokers authenticate to the hub)")
	}
	seen := map[string]bool{}
	for i, u := range l.Users {
		switch {
		case u.User == "" || strings.ContainsAny(u.User, " \t\r\n"):
			add("leafnodes.users[%d]: user is required, without whitespace", i)
		case u.Password == "":
			add("leafnodes.users[%d] (user %s): password is required", i, u.User)
		case u.User == internalUser || u.User == anonymousUser:
			add("leafnodes.users[%d] (user %s): the name is reserved for the broker itself", i, u.User)
		case seen[u.User]:
			add("leafnodes.users[%d] (user %s): listed twice", i, u.User)
		}
		seen[u.User] = true
	}
	if t := l.TLS; t.Enabled() {
		if t.Cert == "" || t.Key == "" {
			add("leafnodes.tls.cert and leafnodes.tls.key: set both")
		}
		if t.Verify && t.CA == "" {
			add("leafnodes.tls.ca: required with leafnodes.tls.verify")
		}
	} else if l.TLS.Verify || l.TLS.CA != "" {
		add("leafnodes.tls: ca and verify require leafnodes.tls.cert and leafnodes.tls.key")
	}
	own := c.JetStreamDomain()
	sites := map[string]bool{}
	for i, s := range l.Sites {
		if err := validDomain(s); err != nil {
			add("leafnodes.sites[%d] %q: %v", i, s, err)
			continue
		}
		if s == own {
			add("leafnodes.sites[%d] %q: the hub's own domain is not a site", i, s)
		}
		if sites[s] {
			add("leafnodes.sites[%d] %q: listed twice", i, s)
		}
		sites[s] = true
	}
}

// parseLeafURL checks a hub URL: nats-leaf, nats or tls scheme and a
// host:port.
func parseLeafURL(s string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return nil, errors.New("not a URL")
	}
	switch u.Scheme {
	case "nats-leaf", "nats", "tls":
	default:
		return nil, fmt.Errorf("scheme %q: want nats-leaf://, nats:// or tls://", u.Scheme)
	}
	if u.Hostname() == "" || u.Port() == "" {
		return nil, errors.New("want scheme://host:port")
	}
	return u, nil
}

// redactURL hides a password written into a URL, for error messages.
func redactURL(s string) string {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.User == nil {
		return s
	}
	return u.Redacted()
}

// LeafPermissions are the permissions of every site broker's user at a hub
// whose JetStream domain is hub: an allow-list, from the site's side.
// Publish is what may cross from a site to the hub, Subscribe what may
// cross from the hub to a site; nothing else crosses either way. They were
// taken from nats-server's trace of a hub and its sites at work (see
// docs/security.md, "Leaf connections are an allow-list"):
//
//   - fleet traffic: requests, discovery and the agents' micro service
//     (ccm.v1.req.>, ccm.v1.disc.>, $SRV.>, ccm.v1.agent.*.stats) go from
//     the hub to the sites only, so an orchestrator at a site reaches its
//     own site alone; replies go back to _INBOX.> inboxes at the hub, and
//     to a site only those of the site brokers' own lookups (InboxPrefix,
//     not the hub broker's), so that no client of a site reads the
//     replies of the hub's clients;
//     registrations (choria.ccm.registration.v1.>) cross both ways as
//     before.
//   - the site's mirror of the hub's assignments: its consumer is created
//     and the hub's bucket looked up with $JS.<hub>.API.CONSUMER.CREATE and
//     STREAM.INFO of KV_CCM_ASSIGNMENTS only; the hub delivers on $JS.M.>
//     and answers on $JSC.R.>; the site answers the flow control on
//     $JS.FC.[<hub>.<account>.]KV_CCM_ASSIGNMENTS.>.
//   - the hub's sources of each site's history and registry: the same with
//     the roles swapped, for CCM_HISTORY and KV_CCM_NODES in any site's
//     domain ($JS.*.API...), deliveries on $JS.S.>.
//   - nats-server's loop detection ($LDS.>: the interest in it crosses
//     from the hub to the sites, which would publish there).
//
// No other JetStream API subject (no purge, delete, update, message get or
// delete, consumer delete), no $KV.> and no $O.> crosses: a client of a
// site broker can neither write nor remove anything of the hub's through
// the JetStream domain, nor reach another site's JetStream, and the
// site-local subjects (SiteLocalSubjects) stay denied as well. What the
// list cannot stop, a consumer of the hub's assignments that a site's
// client creates to deliver elsewhere, ccm-broker's hub deletes (its
// consumer guard).
func LeafPermissions(hub string) *AuthPermissions {
	api := "$JS." + hub + ".API."
	assignments := "KV_" + protocol.AssignmentsBucket
	nodes := "KV_" + protocol.NodesBucket
	history := protocol.HistoryStream
	return &AuthPermissions{
		Publish: &SubjectRules{
			Allow: []string{
				"_INBOX.>",
				registrationSubjects,
				api + "CONSUMER.CREATE." + assignments,
				api + "CONSUMER.CREATE." + assignments + ".>",
				api + "STREAM.INFO." + assignments,
				"$JS.FC." + assignments + ".>",
				"$JS.FC." + hub + ".*." + assignments + ".>",
				"$JS.S.>",
				"$JSC.R.>",
				// nats-server's loop detection: the hub tells a site of
				// the other leaf nodes' interest in these (no messages)
				"$LDS.>",
			},
			Deny: SiteLocalSubjects,
		},
		Subscribe: &SubjectRules{
			Allow: []string{
				protocol.RequestSubjectPrefix + ".>",
				protocol.DiscoverySubjectPrefix + ".>",
				"$SRV.>",
				protocol.SubjectRoot + ".agent.*.stats",
				InboxPrefix + ".>",
				registrationSubjects,
				"$JS.*.API.CONSUMER.CREATE." + history,
				"$JS.*.API.CONSUMER.CREATE." + history + ".>",
				"$JS.*.API.CONSUMER.CREATE." + nodes,
				"$JS.*.API.CONSUMER.CREATE." + nodes + ".>",
				"$JS.*.API.STREAM.INFO." + history,
				"$JS.*.API.STREAM.INFO." + nodes,
				"$JS.FC." + history + ".>",
				"$JS.FC.*.*." + history + ".>",
				"$JS.FC." + nodes + ".>",
				"$JS.FC.*.*." + nodes + ".>",
				"$JS.M.>",
				"$JSC.R.>",
			},
			// the hub broker's own lookups are answered at the hub
			Deny: append(slices.Clone(SiteLocalSubjects), InboxPrefix+"."+hub+".>"),
		},
	}
}

// registrationSubjects are the subjects of the registration stream.
const registrationSubjects = registration.SubjectPrefix + ".>"
