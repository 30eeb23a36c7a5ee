package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/kube/manifests"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
	"github.com/kubeboot/kubeboot/test/nethost"
)

// initManifests is the directory init copies in with --manifests: a
// Namespace and a ConfigMap.
func initManifests(t *testing.T) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "team.yaml"), []byte(teamManifest("1", false)), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func teamManifest(value string, extra bool) string {
	s := `# the team's namespace and settings
apiVersion: v1
kind: Namespace
metadata:
  name: e2e-team
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  value: "` + value + `"
`
	if extra {
		s += "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: e2e-team\n"
	}
	return s
}

// testManifests checks the manifests directory of the control plane h
// (node name): what init --manifests copied in is applied; a file edited
// changes the cluster, objects leave it with their file; a broken file
// shows in `kubeboot status` and as an Event on the node; a deleted file's
// objects are deleted, and nothing else.
func testManifests(t *testing.T, h *nethost.Host, nodeName string) {
	dir := filepath.Join(h.Root, manifests.Dir)
	write := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	value := func() (string, error) {
		return kubectlErr(h, "get", "configmap", "settings", "-o", "jsonpath={.data.value}")
	}
	defer func() {
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(h.Root, node.LogDir, component.ManifestApplier+".log"))
			st, _ := nethost.Run(h.Kubeboot("status"))
			t.Logf("status:\n%s\napplier's log:\n%s", st, log)
		}
	}()

	took := eventually(t, time.Minute, 500*time.Millisecond, "init's manifest applied", func() error {
		if v, err := value(); err != nil || v != "1" {
			return fmt.Errorf("settings.value=%q %v", v, err)
		}
		return nil
	})
	t.Logf("init's manifest applied (checked %s into this subtest)", took.Round(100*time.Millisecond))
	if m := kubectl(t, h, "get", "configmap", "settings", "-o", "jsonpath={.metadata.managedFields[*].manager} {.metadata.annotations}"); !strings.Contains(m, "kubeboot ") || !strings.Contains(m, manifests.FileAnnotation) {
		t.Errorf("settings' managers and annotations: %s", m)
	}
	// Made by hand, kept through everything below.
	kubectl(t, h, "create", "configmap", "by-hand")

	start := time.Now()
	write("team.yaml", teamManifest("2", true))
	eventually(t, time.Minute, 200*time.Millisecond, "the edit applied", func() error {
		if v, err := value(); err != nil || v != "2" {
			return fmt.Errorf("settings.value=%q %v", v, err)
		}
		_, err := kubectlErr(h, "-n", "e2e-team", "get", "configmap", "extra")
		return err
	})
	t.Logf("an edit reached the cluster in %s", time.Since(start).Round(100*time.Millisecond))

	write("team.yaml", teamManifest("2", false))
	eventually(t, time.Minute, 200*time.Millisecond, "an object that left its file deleted", func() error {
		if out, err := kubectlErr(h, "-n", "e2e-team", "get", "configmap", "extra"); err == nil || !strings.Contains(out, "NotFound") {
			return fmt.Errorf("extra is still there: %v %s", err, out)
		}
		return nil
	})

	write("broken.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [\n")
	eventually(t, time.Minute, 500*time.Millisecond, "a broken file in status and in an Event", func() error {
		st, err := nethost.Run(h.Kubeboot("status"))
		if err != nil {
			return fmt.Errorf("status: %v\n%s", err, st)
		}
		line := grepLines(st, "broken.yaml")
		if !strings.Contains(line, "Failed") || !strings.Contains(line, "line 4 (document 1)") {
			return fmt.Errorf("status shows no failed broken.yaml:\n%s", st)
		}
		ev, err := kubectlErr(h, "get", "events", "--field-selector", "involvedObject.kind=Node,involvedObject.name="+nodeName+",reason=ManifestInvalid", "-o", "jsonpath={.items[*].message}")
		if err != nil || !strings.Contains(ev, "broken.yaml") {
			return fmt.Errorf("no ManifestInvalid Event: %v %s", err, ev)
		}
		t.Logf("status: %s", line)
		return nil
	})

	start = time.Now()
	for _, f := range []string{"team.yaml", "broken.yaml"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, time.Minute, 200*time.Millisecond, "a deleted file's objects deleted", func() error {
		if out, err := kubectlErr(h, "get", "configmap", "settings"); err == nil || !strings.Contains(out, "NotFound") {
			return fmt.Errorf("settings is still there: %v %s", err, out)
		}
		// Deleted: gone, or its contents still being removed.
		if out, err := kubectlErr(h, "get", "namespace", "e2e-team", "-o", "jsonpath={.status.phase}"); err == nil && out != "Terminating" {
			return fmt.Errorf("namespace e2e-team is %s", out)
		}
		return nil
	})
	t.Logf("a deletion reached the cluster in %s", time.Since(start).Round(100*time.Millisecond))
	kubectl(t, h, "get", "configmap", "by-hand")
	st, err := nethost.Run(h.Kubeboot("status"))
	if err != nil || strings.Contains(st, "broken.yaml") || strings.Contains(st, "team.yaml") {
		t.Errorf("status after the files were deleted: %v\n%s", err, st)
	}
	kubectl(t, h, "delete", "configmap", "by-hand")
}
