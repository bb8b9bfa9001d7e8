package headline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ccm-fleet/ccm/internal/lab"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// report is the part of ccm-orch's --json report the specs read.
type report struct {
	Hosts []struct {
		Identity string `json:"identity"`
		Outcome  string `json:"outcome"`
		Events   []struct {
			Type        string `json:"type"`
			Name        string `json:"name"`
			Changed     bool   `json:"changed"`
			WouldChange bool   `json:"noop"`
		} `json:"events"`
	} `json:"hosts"`
	Summary struct {
		Hosts struct {
			OK          int `json:"ok"`
			Changed     int `json:"changed"`
			Failed      int `json:"failed"`
			WouldChange int `json:"would_change"`
			NoReply     int `json:"no_reply"`
		} `json:"hosts"`
	} `json:"summary"`
	ExitCode int `json:"exit_code"`
}

// outcomes maps each host of a report to its outcome.
func (r report) outcomes() map[string]string {
	m := map[string]string{}
	for _, h := range r.Hosts {
		m[h.Identity] = h.Outcome
	}
	return m
}

func moduleRoot() string {
	dir, err := os.Getwd()
	Expect(err).NotTo(HaveOccurred())
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		Expect(parent).NotTo(Equal(dir), "no go.mod above the test")
		dir = parent
	}
}

// freePort is a loopback port nothing listens on now.
func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// get fetches a page from the machine's loopback (the hosts share its
// network).
func get(port int) (string, error) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return string(b), err
}

var _ = Describe("ccm-orch ensure service nginx --where os=debian, end to end on 4 lab hosts", Ordered, func() {
	var (
		f        *lab.Fleet
		ports    = map[string]int{}
		web      = []string{"lab1", "lab2"}
		manifest string
	)

	// orch runs ccm-orch --json and decodes its report; it fails the spec
	// when the exit code is not want.
	orch := func(ctx context.Context, want int, args ...string) report {
		GinkgoHelper()
		start := time.Now()
		res, _ := f.Orch(ctx, append(args, "--json")...)
		AddReportEntry("ccm-orch "+strings.Join(args, " "), time.Since(start).Round(time.Millisecond).String())
		Expect(res.Exit).To(Equal(want), "ccm-orch %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), res.Stdout, res.Stderr)
		var r report
		Expect(json.Unmarshal([]byte(res.Stdout), &r)).To(Succeed(), res.Stdout)
		Expect(r.ExitCode).To(Equal(want))
		return r
	}

	BeforeAll(func(ctx SpecContext) {
		Expect(lab.Check()).To(Succeed(), "the real-host specs need root, cgroup2, overlayfs and systemd: they fail here rather than skip")
		root := moduleRoot()
		manifest = filepath.Join(root, "examples", "lab", "nginx.yaml")
		deb, err := lab.BuildDeb(ctx, root, GinkgoT().TempDir())
		Expect(err).NotTo(HaveOccurred())
		opts := lab.FleetOptions{Deb: deb, Facts: map[string]map[string]string{}}
		for i := 1; i <= 4; i++ {
			name := fmt.Sprintf("lab%d", i)
			opts.Hosts = append(opts.Hosts, name)
			ports[name] = freePort()
			opts.Facts[name] = map[string]string{"http_port": fmt.Sprint(ports[name])}
			if slices.Contains(web, name) {
				opts.Facts[name]["role"] = "web"
			}
		}
		start := time.Now()
		f, err = lab.StartFleet(ctx, opts)
		Expect(err).NotTo(HaveOccurred())
		AddReportEntry("fleet of 4 hosts up (boot, dpkg -i, agent started, discovered)", time.Since(start).Round(time.Millisecond).String())
		for _, h := range f.Hosts() {
			AddReportEntry("boot "+h.Name(), h.BootTime().Round(time.Millisecond).String())
		}
		DeferCleanup(func() {
			Expect(f.Close()).To(Succeed())
		})
	}, NodeTimeout(8*time.Minute))

	It("installs nginx from Debian's archive on exactly the two web hosts, and a second run changes nothing", func(ctx SpecContext) {
		r := orch(ctx, 0, "ensure", "package", "nginx", "--where", "os=debian", "--where", "role=web")
		Expect(r.outcomes()).To(Equal(map[string]string{"lab1": "changed", "lab2": "changed"}))
		Expect(r.Summary.Hosts.Changed).To(Equal(2))
		Expect(r.Summary.Hosts.NoReply + r.Summary.Hosts.Failed).To(BeZero())
		for _, h := range f.Hosts() {
			res, _ := h.Run(ctx, "dpkg-query", "-W", "-f=${db:Status-Status}", "nginx")
			if slices.Contains(web, h.Name()) {
				Expect(res.Stdout).To(Equal("installed"), h.Name())
				// The host's policy-rc.d kept the package from starting it.
				active, _ := h.Systemctl(ctx, "is-active", "nginx")
				Expect(strings.TrimSpace(active.Stdout)).To(Equal("inactive"), h.Name())
			} else {
				Expect(res.Stdout).NotTo(Equal("installed"), h.Name())
			}
		}
		again := orch(ctx, 0, "ensure", "package", "nginx", "--where", "os=debian", "--where", "role=web")
		Expect(again.outcomes()).To(Equal(map[string]string{"lab1": "ok", "lab2": "ok"}))
	}, SpecTimeout(5*time.Minute))

	It("configures each web host's nginx on its own port from a fact, running and enabled; each answers", func(ctx SpecContext) {
		start := time.Now()
		r := orch(ctx, 0, "apply", manifest, "--where", "os=debian", "--where", "role=web")
		AddReportEntry("headline run: apply nginx.yaml on the web hosts", time.Since(start).Round(time.Millisecond).String())
		Expect(r.outcomes()).To(Equal(map[string]string{"lab1": "changed", "lab2": "changed"}))
		for _, name := range web {
			body, err := get(ports[name])
			Expect(err).NotTo(HaveOccurred(), name)
			Expect(body).To(Equal(fmt.Sprintf("%s on %d\n", name, ports[name])))
			enabled, _ := f.Host(name).Systemctl(ctx, "is-enabled", "nginx")
			Expect(strings.TrimSpace(enabled.Stdout)).To(Equal("enabled"), name)
		}
		for _, name := range []string{"lab3", "lab4"} {
			_, err := get(ports[name])
			Expect(err).To(HaveOccurred(), "%s is not a web host", name)
		}
		again := orch(ctx, 0, "apply", manifest, "--where", "os=debian", "--where", "role=web")
		Expect(again.outcomes()).To(Equal(map[string]string{"lab1": "ok", "lab2": "ok"}))
	}, SpecTimeout(3*time.Minute))

	It("a fleet-wide noop audit finds the host where someone stopped nginx (exit 5), changes nothing, and a run repairs it", func(ctx SpecContext) {
		_, err := f.Host("lab2").Systemctl(ctx, "stop", "nginx")
		Expect(err).NotTo(HaveOccurred())
		_, err = get(ports["lab2"])
		Expect(err).To(HaveOccurred())

		audit := orch(ctx, 5, "apply", manifest, "--where", "os=debian", "--where", "role=web", "--noop")
		Expect(audit.outcomes()).To(Equal(map[string]string{"lab1": "ok", "lab2": "would_change"}))
		Expect(audit.Summary.Hosts.WouldChange).To(Equal(1))
		active, _ := f.Host("lab2").Systemctl(ctx, "is-active", "nginx")
		Expect(strings.TrimSpace(active.Stdout)).To(Equal("inactive"), "the audit changed the host")

		repair := orch(ctx, 0, "apply", manifest, "--where", "os=debian", "--where", "role=web")
		Expect(repair.outcomes()).To(Equal(map[string]string{"lab1": "ok", "lab2": "changed"}))
		body, err := get(ports["lab2"])
		Expect(err).NotTo(HaveOccurred())
		Expect(body).To(HavePrefix("lab2 on "))
	}, SpecTimeout(3*time.Minute))

	It("after the broker crashes and comes back, the agents (systemd units) answer again and a run counts all 4 hosts exactly", func(ctx SpecContext) {
		f.KillBroker()
		res, err := f.Orch(ctx, "discover", "--json")
		Expect(err).To(HaveOccurred(), "discover with no broker: %s", res.Stdout)
		Expect(f.StartBroker(ctx)).To(Succeed())
		restarted := time.Now()
		Eventually(func(g Gomega) {
			// A short reply timeout: while the agents are still away, each
			// try ends in 10s (a package's default wait is 5m).
			res, _ := f.Orch(ctx, "ensure", "package", "nginx", "--where", "os=debian", "--where", "role=web", "--reply-timeout", "10s", "--json")
			var r report
			g.Expect(json.Unmarshal([]byte(res.Stdout), &r)).To(Succeed(), res.Stdout+res.Stderr)
			g.Expect(r.outcomes()).To(Equal(map[string]string{"lab1": "ok", "lab2": "ok"}))
		}).WithContext(ctx).WithTimeout(60 * time.Second).WithPolling(time.Second).Should(Succeed())
		AddReportEntry("agents answering again after the broker restarted", time.Since(restarted).Round(time.Millisecond).String())
		all := orch(ctx, 5, "ensure", "package", "nginx", "--where", "os=debian", "--noop")
		Expect(all.outcomes()).To(Equal(map[string]string{"lab1": "ok", "lab2": "ok", "lab3": "would_change", "lab4": "would_change"}))
		Expect(all.Summary.Hosts.NoReply).To(BeZero())
	}, SpecTimeout(3*time.Minute))

	It("an assignment with an HTTP health check brings a stopped nginx back on its own", func(ctx SpecContext) {
		health := filepath.Join(filepath.Dir(manifest), "health.yaml")
		res, err := f.Orch(ctx, "assign", "web-nginx", manifest, "--where", "role=web", "--interval", "3s", "--data", health)
		Expect(err).NotTo(HaveOccurred(), res.Stdout)
		DeferCleanup(func(ctx SpecContext) {
			_, err := f.Orch(ctx, "assignments", "rm", "web-nginx")
			Expect(err).NotTo(HaveOccurred())
		})
		Eventually(func(g Gomega) {
			res, _ := f.Orch(ctx, "status", "--assignment", "web-nginx")
			g.Expect(res.Stdout).To(ContainSubstring("2 hosts: 2 converged"))
		}).WithContext(ctx).WithTimeout(60 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

		stopped := time.Now()
		_, err = f.Host("lab1").Systemctl(ctx, "stop", "nginx")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() error {
			_, err := get(ports["lab1"])
			return err
		}).WithContext(ctx).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		AddReportEntry("assignment repaired the stopped nginx after", time.Since(stopped).Round(time.Millisecond).String())
		// The repair was the assignment's run, and its health check passed.
		res, err = f.Orch(ctx, "history", "host", "lab1")
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Stdout).To(ContainSubstring("assignment web-nginx"))
		Eventually(func(g Gomega) {
			res, _ := f.Orch(ctx, "status", "--assignment", "web-nginx", "--json")
			var st struct {
				Assignments []struct {
					Hosts []struct {
						Identity string         `json:"identity"`
						State    string         `json:"state"`
						Health   map[string]int `json:"health"`
					} `json:"hosts"`
				} `json:"assignments"`
			}
			g.Expect(json.Unmarshal([]byte(res.Stdout), &st)).To(Succeed())
			g.Expect(st.Assignments).To(HaveLen(1))
			g.Expect(st.Assignments[0].Hosts).To(HaveLen(2))
			for _, h := range st.Assignments[0].Hosts {
				g.Expect(h.State).To(Equal("converged"), h.Identity)
				g.Expect(h.Health).To(Equal(map[string]int{"OK": 1}), h.Identity)
			}
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	}, SpecTimeout(3*time.Minute))
})
