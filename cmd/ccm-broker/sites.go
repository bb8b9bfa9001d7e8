package main

import (
	"fmt"
	"strings"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/broker"
)

// configFlags are the flags that read the configuration file and make the
// broker a hub or a site broker, and which flags the user set (a flag set
// on the command line wins over the file).
type configFlags struct {
	file       string
	site       string
	hubURLs    []string
	leafListen string
	sites      []string
	domain     string
	set        map[string]*bool
}

// flag registers a flag whose use is tracked.
func (c *configFlags) flag(cmd *fisk.CmdClause, name, help string) *fisk.FlagClause {
	b := new(bool)
	c.set[name] = b
	return cmd.Flag(name, help).IsSetByUser(b)
}

// isSet reports whether the user gave flag name.
func (c *configFlags) isSet(name string) bool {
	b, ok := c.set[name]
	return ok && *b
}

// registerConfigFlags adds --config and the hub and site flags to cmd.
func registerConfigFlags(cmd *fisk.CmdClause, f *brokerFlags) {
	c := &f.conf
	cmd.Flag("config", "Broker configuration file (YAML: listen, store_dir, cluster, tls, auth_file, site, hub, leafnodes, domain); flags given as well win over it").PlaceHolder("FILE").StringVar(&c.file)
	c.flag(cmd, "site", "Run as the site broker of this site: a leaf node of the hub (--hub-url) with its own JetStream domain named after the site").PlaceHolder("NAME").StringVar(&c.site)
	c.flag(cmd, "hub-url", "Leaf node URL of a hub broker this site broker connects to (comma separated or repeated), e.g. nats-leaf://hub1:7422; credentials and TLS go in --config").PlaceHolder("URL").StringsVar(&c.hubURLs)
	c.flag(cmd, "leaf-listen", "Run as a hub: the address host:port site brokers connect to as leaf nodes (their users go in --config)").PlaceHolder("HOST:PORT").StringVar(&c.leafListen)
	c.flag(cmd, "sites", "A hub's sites whose history and registry it sources (comma separated or repeated)").PlaceHolder("NAME").StringsVar(&c.sites)
	c.flag(cmd, "domain", "The JetStream domain of a hub (default hub) or of a broker that is not a site broker").PlaceHolder("NAME").StringVar(&c.domain)
}

// splitList splits comma separated or repeated values, dropping empty ones.
func splitList(values []string) []string {
	var out []string
	for _, v := range values {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// configuration is the broker configuration of the command line: the
// --config file when given, with every flag the user set applied over it
// (the flags alone otherwise).
func (f *brokerFlags) configuration() (broker.Config, error) {
	c := &f.conf
	flags := f.cfg
	flags.Cluster.Routes = splitList(f.routes)
	flags.Site = c.site
	flags.Hub.URLs = splitList(c.hubURLs)
	flags.LeafNodes.Listen = c.leafListen
	flags.LeafNodes.Sites = splitList(c.sites)
	flags.Domain = c.domain
	if c.file == "" {
		if flags.Cluster.Listen == "" && !c.isSet("cluster-name") {
			flags.Cluster.Name = "" // the default name alone does not make a cluster
		}
		return flags, nil
	}
	cfg, err := broker.DecodeConfigFile(c.file)
	if err != nil {
		return broker.Config{}, err
	}
	over := []struct {
		flag  string
		apply func()
	}{
		{"listen", func() { cfg.Listen = flags.Listen }},
		{"store", func() { cfg.StoreDir = flags.StoreDir }},
		{"name", func() { cfg.ServerName = flags.ServerName }},
		{"cluster-listen", func() { cfg.Cluster.Listen = flags.Cluster.Listen }},
		{"routes", func() { cfg.Cluster.Routes = flags.Cluster.Routes }},
		{"cluster-name", func() { cfg.Cluster.Name = flags.Cluster.Name }},
		{"tlscert", func() { cfg.TLS.Cert = flags.TLS.Cert }},
		{"tlskey", func() { cfg.TLS.Key = flags.TLS.Key }},
		{"tlsca", func() { cfg.TLS.CA = flags.TLS.CA }},
		{"tls-verify", func() { cfg.TLS.Verify = flags.TLS.Verify }},
		{"auth-file", func() { cfg.AuthFile = flags.AuthFile }},
		{"site", func() { cfg.Site = flags.Site }},
		{"hub-url", func() { cfg.Hub.URLs = flags.Hub.URLs }},
		{"leaf-listen", func() { cfg.LeafNodes.Listen = flags.LeafNodes.Listen }},
		{"sites", func() { cfg.LeafNodes.Sites = flags.LeafNodes.Sites }},
		{"domain", func() { cfg.Domain = flags.Domain }},
	}
	for _, o := range over {
		if c.isSet(o.flag) {
			o.apply()
		}
	}
	if f.maxStoreSet {
		cfg.MaxStore = flags.MaxStore
	}
	if cfg.Cluster.Listen != "" && cfg.Cluster.Name == "" {
		cfg.Cluster.Name = flags.Cluster.Name // the flag's default
	}
	if err := cfg.Validate(); err != nil {
		return broker.Config{}, fmt.Errorf("config file %s with the flags given: %w", c.file, err)
	}
	return cfg, nil
}

// topologyText says what kind of broker cfg runs, for the operator.
func topologyText(b *broker.Broker, cfg broker.Config) (text, msg string, args []any) {
	switch {
	case cfg.IsSite():
		return fmt.Sprintf("site %s: JetStream domain %s, leaf node of the hub at %s", cfg.Site, cfg.JetStreamDomain(), strings.Join(cfg.Hub.URLs, ",")),
			"site broker", []any{"site", cfg.Site, "domain", cfg.JetStreamDomain(), "hub", cfg.Hub.URLs}
	case cfg.IsHub():
		return fmt.Sprintf("hub: JetStream domain %s, site brokers connect on %s, sourcing sites %s", cfg.JetStreamDomain(), b.LeafURL(), orNone(strings.Join(cfg.LeafNodes.Sites, ","))),
			"hub", []any{"domain", cfg.JetStreamDomain(), "leaf_url", b.LeafURL(), "sites", cfg.LeafNodes.Sites}
	}
	return "", "", nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
