package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kubeboot/kubeboot/pkg/version"
)

// `version -o json` is what programs read (an upgrade reads the new
// binary's); -o yaml and -o short as kubeadm's, --short kept.
func TestVersionOutput(t *testing.T) {
	out, errOut, code := run(t, "version", "-o", "json")
	var info version.Info
	if code != 0 || json.Unmarshal([]byte(out), &info) != nil {
		t.Fatalf("version -o json: exit %d, %q %q", code, out, errOut)
	}
	if info != version.Get() || info.Kubernetes != version.Kubernetes {
		t.Errorf("version -o json: %+v, want %+v", info, version.Get())
	}
	if out, _, _ := run(t, "version", "-o", "yaml"); !strings.Contains(out, "kubernetes: "+version.Kubernetes+"\n") {
		t.Errorf("version -o yaml: %q", out)
	}
	for _, args := range [][]string{{"-o", "short"}, {"--short"}} {
		if out, _, _ := run(t, append([]string{"version"}, args...)...); out != version.Kubernetes+"\n" {
			t.Errorf("version %v: %q", args, out)
		}
	}
	if _, errOut, code := run(t, "version", "-o", "xml"); code == 0 || !strings.Contains(errOut, `invalid output format "xml"`) {
		t.Errorf("version -o xml: exit %d, %q", code, errOut)
	}
}
