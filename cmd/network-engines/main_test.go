package main

import (
	"testing"

	"github.com/kubeboot/kubeboot/internal/host/helpers"
)

// The binary answers to the names the helpers' links give it, and to no
// other.
func TestEngineNames(t *testing.T) {
	links := helpers.Links()
	for _, name := range []string{helpers.Flannel, helpers.KubeRouter} {
		if _, ok := engine(name); !ok {
			t.Errorf("network-engines does not run as %q", name)
		}
		if links[name] != helpers.NetworkEngines {
			t.Errorf("the helpers link %q to %q, not to %s", name, links[name], helpers.NetworkEngines)
		}
	}
	if _, ok := engine(helpers.NetworkEngines); ok {
		t.Errorf("network-engines runs an engine as its own name")
	}
}
