package packaging

import (
	"os"
	"path/filepath"
	"time"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/files"
)

// Installed paths the package owns.
const (
	AgentUnit    = "/lib/systemd/system/ccm-agent.service"
	BrokerUnit   = "/lib/systemd/system/ccm-broker.service"
	AgentConfig  = "/etc/ccm/agent.yaml"
	PolicyConfig = "/etc/ccm/policy.yaml"
	AgentEnv     = "/etc/default/ccm-agent"
	BrokerEnv    = "/etc/default/ccm-broker"
	AgentState   = "/var/lib/ccm-agent"
)

// Info is the nFPM description of the package for arch, with the
// binaries taken from binDir and everything else from c.Root's dist/.
func Info(c Config, arch, binDir string) *nfpm.Info {
	dist := func(name string) string { return filepath.Join(c.Root, "dist", name) }
	version, prerelease := PackageVersion(c.Version)
	var mtime time.Time
	if t, err := time.Parse(time.RFC3339, c.Date); err == nil {
		mtime = t
	}
	file := func(src, dst string, mode os.FileMode) *files.Content {
		return &files.Content{Source: src, Destination: dst, Type: files.TypeFile,
			FileInfo: &files.ContentFileInfo{Mode: mode, MTime: mtime}}
	}
	// Configuration the operator edits: dpkg conffiles and rpm
	// %config(noreplace), so upgrades keep the edited file (dpkg asks or
	// keeps it, rpm writes the new one beside it as .rpmnew).
	config := func(src, dst string) *files.Content {
		c := file(src, dst, 0o644)
		c.Type = files.TypeConfigNoReplace
		return c
	}
	contents := files.Contents{
		config(dist("agent.yaml"), AgentConfig),
		config(dist("policy.yaml"), PolicyConfig),
		config(dist("agent.env"), AgentEnv),
		config(dist("broker.env"), BrokerEnv),
		file(dist("ccm-agent.service"), AgentUnit, 0o644),
		file(dist("ccm-broker.service"), BrokerUnit, 0o644),
		// The agent's audit log and history spool: root only.
		{Destination: AgentState, Type: files.TypeDir,
			FileInfo: &files.ContentFileInfo{Mode: 0o700, MTime: mtime}},
	}
	for _, cmd := range Commands {
		contents = append(contents, file(filepath.Join(binDir, cmd), "/usr/bin/"+cmd, 0o755))
	}
	return &nfpm.Info{
		Name:        Name,
		Arch:        arch,
		Platform:    "linux",
		Version:     version,
		Prerelease:  prerelease,
		Release:     "1",
		Section:     "admin",
		Priority:    "optional",
		Maintainer:  "CCM Fleet <ccm-fleet@users.noreply.github.com>",
		Description: "CCM Fleet configuration management: ccm-agent (runs on every managed host, with its systemd unit), ccm-orch (operators' command line) and ccm-broker (an embedded NATS broker, with a unit for labs and small sites). Nothing is enabled or started on install.",
		Homepage:    "https://github.com/ccm-fleet/ccm",
		MTime:       mtime,
		Overridables: nfpm.Overridables{
			Contents: contents,
			Scripts: nfpm.Scripts{
				PostInstall: dist("packager/postinstall.sh"),
				PostRemove:  dist("packager/postremove.sh"),
			},
			RPM: nfpm.RPM{Group: "System Environment/Daemons", Summary: "CCM Fleet agent, orchestrator and broker"},
		},
	}
}
