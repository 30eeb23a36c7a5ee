// Command helpers builds the per-pod helpers kubeboot carries (see package
// internal/host/helpers) from their main packages at the versions go.mod pins,
// static and stripped, and writes them zstd-compressed with their manifest
// into the directory the kubeboot_helpers build embeds. `make build` runs
// it before building kubeboot.
//
//	go run ./hack/helpers [-o internal/host/helpers/bin]
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/kubeboot/kubeboot/internal/host/helpers"
)

// The helpers: file name → main package. go build names each binary
// after the last element of its package path, which is the helper's name.
var packages = map[string]string{
	helpers.Shim:  "github.com/kubeboot/kubeboot/cmd/containerd-shim-runc-v2",
	helpers.Pause: "github.com/kubeboot/kubeboot/cmd/pause",
	// Not per pod, but the one file of an image, kept small too.
	helpers.TestServer: "github.com/kubeboot/kubeboot/cmd/test-server",
	helpers.CoreDNS:    "github.com/kubeboot/kubeboot/cmd/coredns",
	// The storage add-on: upstream's main package is its module's root.
	helpers.LocalPathProvisioner: "github.com/rancher/local-path-provisioner",
	helpers.LocalPathHelper:      "github.com/kubeboot/kubeboot/cmd/local-path-helper",
	helpers.MetricsServer:        "github.com/kubeboot/kubeboot/cmd/metrics-server",
	// flannel and kube-router, one binary (helpers.Links).
	helpers.NetworkEngines: "github.com/kubeboot/kubeboot/cmd/network-engines",
	"bridge":               "github.com/containernetworking/plugins/plugins/main/bridge",
	"host-local":           "github.com/containernetworking/plugins/plugins/ipam/host-local",
	"portmap":              "github.com/containernetworking/plugins/plugins/meta/portmap",
}

// buildAlone names the helpers that cannot share a go build with the others.
var buildAlone = map[string]bool{helpers.LocalPathProvisioner: true}

// buildTags are a helper's build tags, as its upstream builds it (each
// such helper gets a go build of its own). The shim: containerd's Makefile
// builds it with no_grpc (the API's gRPC stubs, which a shim never serves
// — it speaks ttrpc; the binary 13.8 → 7.9 MiB, its anonymous memory
// 0.33 MiB less a pod: docs/design.md §14) and urfave_cli_no_docs.
var buildTags = map[string]string{helpers.Shim: "no_grpc urfave_cli_no_docs"}

func main() {
	out := flag.String("o", "internal/host/helpers/bin", "directory to write the compressed helpers and their manifest to")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "helpers:", err)
		os.Exit(1)
	}
}

func modVersion(mod string) (string, error) {
	b, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", mod).Output()
	return strings.TrimSpace(string(b)), err
}

func run(out string) error {
	containerd, err := modVersion("github.com/containerd/containerd/v2")
	if err != nil {
		return err
	}
	plugins, err := modVersion("github.com/containernetworking/plugins")
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "kubeboot-helpers-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	// go build rejects one build whose packages import one path in two
	// casings: local-path-provisioner imports github.com/Sirupsen/logrus,
	// containerd github.com/sirupsen/logrus. Those built alone get their own
	// go build; all go builds run at once.
	var together []string
	type build struct{ tags, pkgs []string }
	builds := []build{}
	for _, name := range sortedKeys(packages) {
		if tags, ok := buildTags[name]; ok {
			builds = append(builds, build{[]string{"-tags", tags}, []string{packages[name]}})
		} else if buildAlone[name] {
			builds = append(builds, build{nil, []string{packages[name]}})
		} else {
			together = append(together, packages[name])
		}
	}
	builds = append(builds, build{nil, together})
	ldflags := "-s -w" +
		" -X github.com/containerd/containerd/v2/version.Version=" + strings.TrimPrefix(containerd, "v") +
		" -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=" + plugins
	errs := make([]error, len(builds))
	var wg sync.WaitGroup
	for i, b := range builds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := append([]string{"build", "-trimpath", "-ldflags", ldflags, "-o", tmp + "/"}, b.tags...)
			cmd := exec.Command("go", append(args, b.pkgs...)...)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
			if err := cmd.Run(); err != nil {
				errs[i] = fmt.Errorf("go build %s: %w", strings.Join(b.pkgs, " "), err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	// One pack, each helper at its offset: the binary embeds it as one
	// string, whose pages a reader can hand back once it has read them.
	pack, err := os.Create(filepath.Join(out, helpers.PackFile))
	if err != nil {
		return err
	}
	defer pack.Close()
	m := helpers.Manifest{Links: helpers.Links()}
	var total, packed int64
	for _, name := range sortedKeys(packages) {
		b, err := os.ReadFile(filepath.Join(tmp, name))
		if err != nil {
			return err
		}
		z, err := helpers.Compress(b)
		if err != nil {
			return err
		}
		if _, err := pack.Write(z); err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		m.Helpers = append(m.Helpers, helpers.Entry{Name: name, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(b)), Package: packages[name],
			Offset: packed, Compressed: int64(len(z))})
		total += int64(len(b))
		packed += int64(len(z))
		fmt.Printf("helper %-24s %6.1f MiB, %5.1f MiB compressed\n", name, mib(len(b)), mib(len(z)))
	}
	if err := pack.Close(); err != nil {
		return err
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, helpers.ManifestFile), b, 0o644); err != nil {
		return err
	}
	fmt.Printf("helpers: %.1f MiB, %.1f MiB compressed, in %s\n", mib(int(total)), mib(int(packed)), out)
	return nil
}

func mib(n int) float64 { return float64(n) / (1 << 20) }

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
