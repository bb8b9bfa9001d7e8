// Command ccm-lab boots a lab of real systemd hosts on this machine (see
// package internal/lab), each running the project's agent from its .deb,
// with a broker and a signing key, prints the ccm-orch commands to try, and
// tears everything down on Ctrl-C. It is what `make lab` runs; it is not
// packaged. Run it as root from the module's checkout.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ccm-fleet/ccm/internal/lab"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ccm-lab:", err)
		os.Exit(1)
	}
}

func run() error {
	hosts := flag.Int("hosts", 4, "how many lab hosts to boot (lab1, lab2, ...)")
	web := flag.Int("web", 2, "how many of them get the custom fact role=web (the first ones)")
	deb := flag.String("deb", "", "the ccm-fleet .deb to install (default: build one from this checkout)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: ccm-lab [flags]\n\nBoots lab hosts (systemd as PID 1 in private namespaces, as root), installs\nthe project's .deb in each, starts ccm-agent as its unit and waits for Ctrl-C.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (see --help)", flag.Arg(0))
	}
	if *hosts < 1 || *hosts > 32 {
		return fmt.Errorf("--hosts %d: give 1 to 32", *hosts)
	}
	if *web < 0 || *web > *hosts {
		return fmt.Errorf("--web %d: give 0 to --hosts (%d)", *web, *hosts)
	}
	if err := lab.Check(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	start := time.Now()
	if *deb == "" {
		if _, err := os.Stat("go.mod"); err != nil {
			return errors.New("run from the module's checkout (make lab), or give --deb")
		}
		out, err := os.MkdirTemp("", "ccm-lab-deb-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(out)
		fmt.Println("building the ccm-fleet .deb ...")
		if *deb, err = lab.BuildDeb(ctx, ".", out); err != nil {
			return err
		}
	}
	opts := lab.FleetOptions{Deb: *deb, Facts: map[string]map[string]string{}}
	for i := 1; i <= *hosts; i++ {
		name := fmt.Sprintf("lab%d", i)
		opts.Hosts = append(opts.Hosts, name)
		facts := map[string]string{"http_port": fmt.Sprint(8080 + i)}
		if i <= *web {
			facts["role"] = "web"
		}
		opts.Facts[name] = facts
	}
	fmt.Printf("booting %d hosts, installing %s in each ...\n", *hosts, filepath.Base(*deb))
	f, err := lab.StartFleet(ctx, opts)
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("\nstopping the lab ...")
		if err := f.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "ccm-lab:", err)
		}
	}()
	fmt.Printf("\n%d hosts up in %s:\n", *hosts, time.Since(start).Round(100*time.Millisecond))
	for _, h := range f.Hosts() {
		fmt.Printf("  %-6s systemd pid %-7d booted in %-6s facts %s\n", h.Name(), h.PID(), h.BootTime().Round(10*time.Millisecond), factList(opts.Facts[h.Name()]))
	}
	fmt.Printf(`
In another shell:

  export CCM_SERVER=%s CCM_KEY=%s
  export PATH=%s:$PATH
  ccm-orch discover
  ccm-orch ensure package nginx --where os=debian --where role=web
  ccm-orch apply examples/lab/nginx.yaml --where role=web
  ccm-orch apply examples/lab/nginx.yaml --where role=web --noop
  ccm-orch assign web-nginx examples/lab/nginx.yaml --where role=web --interval 10s --data examples/lab/health.yaml
  ccm-orch status

  nsenter -t %d -m -u -i -p -C -r -w bash     # a root shell on lab1 (systemctl stop nginx, ...)

Press Ctrl-C to stop the lab.
`, f.Server, f.Key, f.Bin, f.Hosts()[0].PID())
	<-ctx.Done()
	return nil
}

func factList(m map[string]string) string {
	var parts []string
	for _, k := range []string{"role", "http_port"} {
		if v, ok := m[k]; ok {
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, " ")
}
