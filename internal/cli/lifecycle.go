package cli

import (
	"github.com/spf13/pflag"

	"github.com/kubeboot/kubeboot/internal/host/node"
)

func addRegistryMirrorFlag(fs *pflag.FlagSet, values *[]string) {
	fs.StringArrayVar(values, "registry-mirror", nil, "REGISTRY=URL[,URL...]: containerd pulls images of REGISTRY (registry.k8s.io, docker.io, 10.0.0.5:5000, or _default for every one) from these mirrors first, in order, so manifests keep their upstream names on an air-gapped site. Repeat for more registries. Written as containerd's hosts.toml under "+node.RegistryHostsDir+", where your own hosts.toml files (private CAs, credentials) can go too")
}
