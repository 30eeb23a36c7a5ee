package component

import (
	"encoding/json"
	"os"
	"path"
	"strings"

	"github.com/kubeboot/kubeboot/internal/host/nodestate"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// EtcdMember is this node's etcd member name, from its record (the host
// name when it has none).
func (s Store) EtcdMember() string {
	if n, err := s.Node(); err == nil && n.Etcd != nil && n.Etcd.Name != "" {
		return n.Etcd.Name
	}
	host, _ := os.Hostname()
	return host
}

// Node is the record of the node under s (package nodestate) or, on a
// node made before records were, the same facts read from the flags its
// components' specs carry: the one place that reads rendered flags back,
// kept for such nodes (an upgrade writes their record).
func (s Store) Node() (nodestate.Node, error) {
	n, ok, err := nodestate.Read(s.FS)
	if err != nil || ok {
		return n, err
	}
	return s.legacyNode()
}

func (s Store) legacyNode() (nodestate.Node, error) {
	specs, err := s.Load()
	if err != nil {
		return nodestate.Node{}, err
	}
	n := nodestate.Node{Legacy: true, Role: nodestate.Worker, CertificatesDir: config.DefaultCertificatesDir}
	// Specs hold host paths; the record node paths.
	root := strings.TrimSuffix(s.FS.Path("/"), "/")
	nodePath := func(p string) string {
		if rel, ok := strings.CutPrefix(p, root); ok && path.IsAbs(rel) {
			return rel
		}
		return p
	}
	for _, sp := range specs {
		n.Add(sp.Name)
		flag := func(name string) string { return FlagValue(sp.Args, "--"+name) }
		switch sp.Name {
		case Kubelet:
			n.Name = flag("hostname-override")
			if ips := flag("node-ip"); ips != "" {
				n.Addresses = strings.Split(ips, ",")
			}
		case APIServer:
			n.Role = nodestate.ControlPlane
			if ca := flag("client-ca-file"); ca != "" {
				n.CertificatesDir = nodePath(path.Dir(ca))
			}
		case Etcd:
			n.Etcd = &nodestate.EtcdMember{Name: flag("name"), DataDir: nodePath(flag("data-dir")), PeerURL: flag("initial-advertise-peer-urls")}
			if n.Etcd.DataDir == "" {
				n.Etcd.DataDir = config.DefaultEtcdDataDir
			}
		case Flannel, KubeRouter:
			if v := flag("pod-subnets"); v != "" {
				n.PodSubnets = strings.Split(v, ",")
			}
		}
	}
	if n.PodSubnets == nil {
		// kubeboot's network agent of before flannel had them in its own
		// configuration.
		var old struct {
			Own struct {
				NetAgent struct {
					PodSubnets string `json:"podSubnets"`
				} `json:"netAgent"`
			} `json:"own"`
		}
		if b, err := s.FS.ReadFile(SpecPath(RetiredNetAgent)); err == nil && json.Unmarshal(b, &old) == nil && old.Own.NetAgent.PodSubnets != "" {
			n.PodSubnets = strings.Split(old.Own.NetAgent.PodSubnets, ",")
		}
	}
	return n, nil
}

// NodeIPs are the node's addresses, as its kubelet registers them: the
// node-ip given to the kubelet (both families' on a dual-stack node), or
// the advertised address.
func (r Renderer) NodeIPs() []string { return strings.Split(r.nodeIPs(), ",") }

// EtcdMember is the node's local etcd member, as LocalEtcd and
// JoiningEtcd render it.
func (r Renderer) EtcdMember() *nodestate.EtcdMember {
	return &nodestate.EtcdMember{Name: r.Cfg.Init.NodeRegistration.Name, DataDir: r.Cfg.Cluster.Etcd.Local.DataDir, PeerURL: r.EtcdPeerURL()}
}
