package node

import (
	"fmt"
	"net"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/images"
)

// RegistryHostsDir is containerd's registry configuration directory
// (config_path): a directory per registry name holding its hosts.toml,
// which containerd reads at every pull. kubeboot writes those of
// --registry-mirror; an operator may add their own (a private CA, client
// certificates, headers), as containerd documents them.
const RegistryHostsDir = ConfigDir + "/containerd/certs.d"

// Mirror is a registry (a host name with an optional port, or "_default"
// for every registry) and the mirrors pulls of its images try first, in
// order, before the registry itself.
type Mirror struct {
	Registry  string
	Endpoints []string
}

// ParseMirrors reads --registry-mirror values, REGISTRY=URL[,URL...];
// a registry given twice gets the mirrors of both, in order.
func ParseMirrors(values []string) ([]Mirror, error) {
	var out []Mirror
	index := map[string]int{}
	for _, v := range values {
		reg, urls, ok := strings.Cut(v, "=")
		if !ok || reg == "" || urls == "" {
			return nil, fmt.Errorf("--registry-mirror %q: want REGISTRY=URL[,URL...], e.g. registry.k8s.io=http://10.0.0.5:5000", v)
		}
		if reg == images.Registry {
			return nil, fmt.Errorf("--registry-mirror %q: %s names kubeboot's own images, which the node serves itself from the binary", v, reg)
		}
		if err := validRegistry(reg); err != nil {
			return nil, fmt.Errorf("--registry-mirror %q: %w", v, err)
		}
		i, seen := index[reg]
		if !seen {
			i = len(out)
			index[reg] = i
			out = append(out, Mirror{Registry: reg})
		}
		for _, u := range strings.Split(urls, ",") {
			p, err := url.Parse(u)
			if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || p.RawQuery != "" || p.Fragment != "" {
				return nil, fmt.Errorf("--registry-mirror %q: %q is not an http:// or https:// URL of a registry", v, u)
			}
			out[i].Endpoints = append(out[i].Endpoints, strings.TrimSuffix(u, "/"))
		}
	}
	return out, nil
}

// validRegistry accepts what an image reference names as its registry:
// a host name or IP, with an optional port; no scheme, no path.
func validRegistry(reg string) error {
	if reg == "_default" {
		return nil
	}
	if strings.Contains(reg, "/") {
		return fmt.Errorf("%q is not a registry name: a host with an optional port, as in registry.k8s.io or 10.0.0.5:5000, without a scheme or path", reg)
	}
	host := reg
	if h, port, err := net.SplitHostPort(reg); err == nil {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q: %q is not a port", reg, port)
		}
		host = h
	}
	if net.ParseIP(host) == nil && (host == "" || strings.ContainsAny(host, "/:@ ")) {
		return fmt.Errorf("%q is not a registry name (a host with an optional port, as in registry.k8s.io or 10.0.0.5:5000; no scheme or path)", reg)
	}
	return nil
}

// HostsTOML is containerd's hosts.toml for one registry: the mirrors,
// tried in order for pulls and resolution; the registry itself stays the
// last resort (containerd's default), which fails at once where there is
// no network.
func HostsTOML(m Mirror) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by kubeboot (--registry-mirror): pulls of %s/... try these mirrors first, in order.\n", m.Registry)
	for _, e := range m.Endpoints {
		fmt.Fprintf(&b, "\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n", e)
	}
	return b.String()
}

// ImageRegistryHostsTOML sends the pulls of kubeboot's own images
// (kubeboot.local/...) to the node daemon's image-registry only: with
// `server` set, containerd tries no other host, and an http:// URL with
// no TLS settings is plain HTTP to loopback.
func ImageRegistryHostsTOML() string {
	return fmt.Sprintf(`# Written by kubeboot: its own images (%s/...) come from the node daemon's
# image-registry, which serves them from the kubeboot binary on loopback.
server = "http://127.0.0.1:%d"
capabilities = ["pull", "resolve"]
`, images.Registry, ImageRegistryPort)
}

// WriteImageRegistry writes the hosts.toml of kubeboot's own images.
func WriteImageRegistry(fs fsys.FS) error {
	return fs.WriteFile(HostsFile(images.Registry), []byte(ImageRegistryHostsTOML()), 0o644)
}

// HostsFile is the node path of a registry's hosts.toml.
func HostsFile(registry string) string {
	return path.Join(RegistryHostsDir, registry, "hosts.toml")
}

// WriteMirrors writes the hosts.toml of every mirrored registry.
func WriteMirrors(fs fsys.FS, mirrors []Mirror) error {
	for _, m := range mirrors {
		if err := fs.WriteFile(HostsFile(m.Registry), []byte(HostsTOML(m)), 0o644); err != nil {
			return err
		}
	}
	return nil
}
