package orchestrator_test

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/protocol"
)

// Discover finds the hosts a filter selects; the round ends once no host
// answered for the quiet window.
func ExampleClient_Discover() {
	url, stop := exampleFleet()
	defer stop()
	nc, err := nats.Connect(url)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()

	filter, err := protocol.ParseFilter([]string{"os=debian"})
	if err != nil {
		fmt.Println(err)
		return
	}
	nodes, err := orchestrator.New(nc).Discover(context.Background(), orchestrator.DiscoverOptions{Filter: filter})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, n := range nodes {
		fmt.Println(n.Identity, n.Facts["os"], n.Facts["role"])
	}
	// Output:
	// web-0001 debian web
	// web-0003 debian db
}

// Run sends one resource to the selected hosts and sums their answers up.
// Under noop nothing changes and drift is exit code 5.
func ExampleClient_Run() {
	url, stop := exampleFleet()
	defer stop()
	nc, err := nats.Connect(url)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()

	filter, _ := protocol.ParseFilter([]string{"role=web"})
	ensure, _ := protocol.NewEnsureRequest("exec", map[string]any{"name": "/bin/true"})
	client := orchestrator.New(nc)
	for _, noop := range []bool{true, false} {
		res, err := client.Run(context.Background(), orchestrator.Request{Filter: filter, Ensure: ensure, Noop: noop})
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, g := range res.Groups {
			fmt.Printf("%d hosts: %s %s %v\n", g.Count, g.Resource, g.Outcome, g.Hosts)
		}
		fmt.Println("exit code", res.ExitCode)
	}
	// Output:
	// 2 hosts: exec#/bin/true would_change [web-0001 web-0002]
	// exit code 5
	// 2 hosts: exec#/bin/true changed [web-0001 web-0002]
	// exit code 0
}
