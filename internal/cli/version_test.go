package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/base/version"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
	"github.com/kubeboot/kubeboot/internal/runtime/service"
)

// TestVersionFlag: --version prints the versions on any command and never
// runs the command, so `init --version` leaves the host untouched.
func TestVersionFlag(t *testing.T) {
	root := filepath.Join(t.TempDir(), "node")
	for _, args := range [][]string{
		{"--version"},
		{"init", "--version", "--root", root},
		{"reset", "--version", "--force", "--root", root},
	} {
		var out, errOut bytes.Buffer
		if code := Run(args, Streams{In: strings.NewReader(""), Out: &out, Err: &errOut}, nil); code != 0 {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errOut.String())
		}
		if !strings.HasPrefix(out.String(), "kubeboot: ") || !strings.Contains(out.String(), "\nKubernetes: ") {
			t.Errorf("%v printed %q, want the version text", args, out.String())
		}
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("init --version touched %s (stat: %v)", root, err)
	}
}

// `kubeboot etcd snapshot ...` is kubeboot's command, not the embedded
// etcd server of the same name (which takes no positional arguments).
func TestEtcdSubcommandsAreKubeboots(t *testing.T) {
	for _, c := range []struct {
		args []string
		own  bool
	}{
		{[]string{"etcd", "snapshot", "save", "f"}, true},
		{[]string{"etcd", "members"}, true},
		{[]string{"etcd", "--name", "x"}, false},
		{[]string{"etcd"}, false},
		{[]string{"kube-apiserver", "snapshot"}, false},
	} {
		if got := IsOwnSubcommand(c.args); got != c.own {
			t.Errorf("IsOwnSubcommand(%v) = %v, want %v", c.args, got, c.own)
		}
	}
}

// The daemon runs in its process exactly the components the rest of
// kubeboot (upgrade, status) knows it runs there, and each has a command
// that runs it by hand.
func TestInProcessComponentsAreInDaemon(t *testing.T) {
	got := slices.Sorted(maps.Keys(service.InProcess(fsys.NewRoot("/"))))
	want := slices.Sorted(slices.Values(component.InDaemon))
	if !slices.Equal(got, want) {
		t.Errorf("the daemon runs %v in its process, component.InDaemon says %v", got, want)
	}
	root := NewCommand(Streams{Out: io.Discard, Err: io.Discard}, nil)
	for _, name := range component.InDaemon {
		if c, _, err := root.Find([]string{name}); err != nil || c.Name() != name {
			t.Errorf("no command runs %s by hand", name)
		}
	}
}

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
	if _, errOut, code := run(t, "version", "-o", "xml"); code == 0 || !strings.Contains(errOut, `invalid output format "xml": one of json, yaml, short`) {
		t.Errorf("version -o xml: exit %d, %q", code, errOut)
	}
}

// status refuses an output it does not print, and says when no daemon
// runs: in words without -o, as an error when a program asked for data.
func TestStatusOutputs(t *testing.T) {
	root := t.TempDir()
	for _, c := range []struct {
		args []string
		out  string
		err  string
	}{
		{[]string{"-o", "xml"}, "", `invalid output format "xml": one of json, yaml`},
		{[]string{"--watch", "-o", "yaml"}, "", "--watch prints one JSON document per line"},
		{nil, "The kubeboot daemon is not running for " + root, ""},
		{[]string{"-o", "json"}, "", "the kubeboot daemon is not running for " + root},
		{[]string{"--watch"}, "", "the kubeboot daemon is not running"},
	} {
		out, errOut, code := run(t, append([]string{"status", "--root", root}, c.args...)...)
		if (code == 0) != (c.err == "") || !strings.Contains(out, c.out) || !strings.Contains(errOut, c.err) {
			t.Errorf("status %v: exit %d, stdout %q, stderr %q; want %q / %q", c.args, code, out, errOut, c.out, c.err)
		}
	}
}
