package main

import (
	"os/exec"
	"strings"
	"testing"
)

// Only kube-router's firewall is linked: its routing (BGP) and service
// proxy, which kubeboot does not run, stay out of the binary, and with
// them the advisories reported against v2.1.0's routing and proxy.
func TestOnlyTheFirewallIsLinked(t *testing.T) {
	if testing.Short() {
		t.Skip("go list of the command's dependencies")
	}
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	var firewall bool
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "github.com/cloudnativelabs/kube-router/v2/pkg/controllers/") {
			if p == "github.com/cloudnativelabs/kube-router/v2/pkg/controllers/netpol" {
				firewall = true
				continue
			}
			t.Errorf("linked: %s", p)
		}
		if strings.Contains(p, "gobgp") {
			t.Errorf("linked: %s", p)
		}
	}
	if !firewall {
		t.Error("the network policy controller is not linked")
	}
}
