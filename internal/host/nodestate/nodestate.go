// Package nodestate is the record of what a node is: its name, role,
// addresses, certificates, etcd member and components. init and join
// write it as they hand the node's components to its daemon, upgrade
// updates it, and whatever needs a node's facts later (reset, the etcd
// commands, upgrade) reads it, not the flags its components were given.
package nodestate

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"slices"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/host/node"
)

// File is the node path of the record.
const File = node.StateDir + "/node.json"

// Role is what a node is in its cluster.
type Role string

const (
	ControlPlane Role = "control-plane"
	Worker       Role = "worker"
)

// Node is a node's record. Paths in it are node paths (under the root
// prefix of the node's fsys.FS).
type Node struct {
	// Name is its Node object's name (the kubelet's --hostname-override).
	Name string `json:"name"`
	Role Role   `json:"role"`
	// Addresses are the addresses its kubelet registers (one of each
	// family on a dual-stack node), the advertised one first.
	Addresses []string `json:"addresses,omitempty"`
	// CertificatesDir holds its certificates (the cluster's
	// certificatesDir).
	CertificatesDir string `json:"certificatesDir"`
	// PodSubnets are the cluster's pod network, as the node's network
	// engines are given it.
	PodSubnets []string `json:"podSubnets,omitempty"`
	// Etcd is its local etcd member; nil when it runs none.
	Etcd *EtcdMember `json:"etcd,omitempty"`
	// Components are the names of the components it runs, sorted.
	Components []string `json:"components,omitempty"`
	// Version is the Kubernetes version its components run (the one
	// kubeboot's binary carries); "" on a node recorded from its specs
	// alone (see Legacy).
	Version string `json:"version,omitempty"`
	// Kubeboot is the kubeboot release whose binary runs its components,
	// as `kubeboot version` names it; "" on a node recorded before it was.
	Kubeboot string `json:"kubeboot,omitempty"`
	// Legacy is set on a record read from a node made before records
	// were: its facts come from its components' flags.
	Legacy bool `json:"-"`
}

// EtcdMember is a node's local etcd member.
type EtcdMember struct {
	Name    string `json:"name"`
	DataDir string `json:"dataDir"`
	PeerURL string `json:"peerURL"`
}

// Runs reports whether the node runs a component.
func (n Node) Runs(name string) bool { return slices.Contains(n.Components, name) }

// Add records that the node runs a component.
func (n *Node) Add(name string) {
	if i, found := slices.BinarySearch(n.Components, name); !found {
		n.Components = slices.Insert(n.Components, i, name)
	}
}

// Read reads the record of the node under fs; ok is false when it has
// none.
func Read(fs fsys.FS) (n Node, ok bool, err error) {
	b, err := fs.ReadFile(File)
	if os.IsNotExist(err) {
		return Node{}, false, nil
	}
	if err != nil {
		return Node{}, false, err
	}
	if err := json.Unmarshal(b, &n); err != nil {
		return Node{}, false, fmt.Errorf("%s: %w", fs.Path(File), err)
	}
	return n, true, nil
}

// Write saves the record (0600: it names the node's paths, which only
// root reads).
func Write(fs fsys.FS, n Node) error {
	b, err := json.MarshalIndent(n, "", "  ")
	if err != nil {
		return err
	}
	if err := fs.MkdirAll(path.Dir(File), 0o700); err != nil {
		return err
	}
	return fs.WriteFile(File, append(b, '\n'), 0o600)
}
