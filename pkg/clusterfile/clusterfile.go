// Package clusterfile reads the file `kubeboot apply -f` brings a whole
// cluster up from: the hosts, how to reach each over SSH, and the
// cluster's kubeadm v1beta4 documents.
//
//	apiVersion: kubeboot.io/v1alpha1
//	kind: Cluster
//	hosts:
//	- {address: 10.0.0.1, role: control-plane, nodeName: cp1, ssh: {user: root, keyPath: /root/.ssh/id_ed25519}}
//	- {address: 10.0.0.2, role: worker, nodeName: w1}
//	kubeadm: |
//	  apiVersion: kubeadm.k8s.io/v1beta4
//	  kind: ClusterConfiguration
//
// Errors name the file and the line.
package clusterfile

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubeboot/kubeboot/pkg/config"
)

// The file's type.
const (
	APIVersion = "kubeboot.io/v1alpha1"
	Kind       = "Cluster"
)

// Roles of a host.
const (
	RoleControlPlane = "control-plane"
	RoleWorker       = "worker"
)

// Cluster is the whole file.
type Cluster struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	// Hosts are the cluster's machines. The first control plane is the
	// one `init` runs on; the others join it, control planes one at a
	// time, then the workers in parallel.
	Hosts []Host `yaml:"hosts"`
	// Kubeadm holds the cluster's kubeadm v1beta4 documents, as `init
	// --config` reads them (ClusterConfiguration, KubeletConfiguration,
	// KubeProxyConfiguration; an InitConfiguration's nodeRegistration is
	// each host's own and set from the host).
	Kubeadm string `yaml:"kubeadm,omitempty"`

	// Source is where the file was read from.
	Source string `yaml:"-"`
	// KubeadmConfig is Kubeadm parsed (nil when empty).
	KubeadmConfig *config.Config `yaml:"-"`
	lines         []int          // each host's line
}

// Host is one machine of the cluster.
type Host struct {
	// Address is where the operator's machine reaches the host's SSH
	// server, and (unless AdvertiseAddress says otherwise) the address
	// the node advertises to the cluster.
	Address string `yaml:"address"`
	// Role is control-plane or worker.
	Role string `yaml:"role"`
	// NodeName is the Node's name; the host's hostname when empty.
	NodeName string `yaml:"nodeName,omitempty"`
	// AdvertiseAddress is the address other nodes reach this one on, when
	// it is not Address (a host behind NAT from the operator).
	AdvertiseAddress string `yaml:"advertiseAddress,omitempty"`
	// Root is kubeboot's --root on the host ("/" when empty): several
	// nodes on one machine, as kubeboot's tests run them.
	Root string `yaml:"root,omitempty"`
	SSH  SSH    `yaml:"ssh,omitempty"`
}

// SSH is how a host is reached.
type SSH struct {
	// User logs in; commands run with sudo when it is not root.
	User string `yaml:"user,omitempty"`
	Port int    `yaml:"port,omitempty"`
	// KeyPath is a private key file (unencrypted; an encrypted key goes
	// through the SSH agent). Without it the agent ($SSH_AUTH_SOCK) is
	// used.
	KeyPath string `yaml:"keyPath,omitempty"`
	// KnownHosts is the known_hosts file host keys are checked against
	// (~/.ssh/known_hosts when empty). An unknown or changed key is
	// refused.
	KnownHosts string `yaml:"knownHosts,omitempty"`
	// Bastion is a jump host the connection goes through.
	Bastion *Bastion `yaml:"bastion,omitempty"`
}

// Bastion is a jump host.
type Bastion struct {
	Address string `yaml:"address"`
	User    string `yaml:"user,omitempty"`
	Port    int    `yaml:"port,omitempty"`
	KeyPath string `yaml:"keyPath,omitempty"`
}

// typeInGo is the Go type yaml's errors name, which says nothing to the
// file's author.
var typeInGo = regexp.MustCompile(` in type [\w.]+| into [\w.\[\]*]+`)

// Read reads and validates the file.
func Read(file string) (*Cluster, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return Parse(file, b)
}

// Parse reads a cluster file from data, fills in defaults and validates
// it; source names it in errors.
func Parse(source string, data []byte) (*Cluster, error) {
	c := &Cluster{Source: source}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			msgs := make([]string, len(te.Errors))
			for i, e := range te.Errors {
				msgs[i] = source + ": " + typeInGo.ReplaceAllString(e, "")
			}
			return nil, errors.New(strings.Join(msgs, "\n"))
		}
		return nil, fmt.Errorf("%s: %s", source, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err == nil {
		c.lines = hostLines(&root)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// hostLines finds the line of each item of hosts.
func hostLines(root *yaml.Node) []int {
	if root.Kind != yaml.DocumentNode || len(root.Content) == 0 {
		return nil
	}
	m := root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "hosts" && m.Content[i+1].Kind == yaml.SequenceNode {
			var lines []int
			for _, h := range m.Content[i+1].Content {
				lines = append(lines, h.Line)
			}
			return lines
		}
	}
	return nil
}

// hostErr is an error about host i, with its line.
func (c *Cluster) hostErr(i int, format string, args ...any) error {
	where := fmt.Sprintf("hosts[%d]", i)
	if i < len(c.lines) {
		where = fmt.Sprintf("line %d: %s", c.lines[i], where)
	}
	return fmt.Errorf("%s: %s: %s", c.Source, where, fmt.Sprintf(format, args...))
}

func (c *Cluster) validate() error {
	switch {
	case c.APIVersion != APIVersion:
		return fmt.Errorf("%s: apiVersion: Unsupported value %q: kubeboot reads %s", c.Source, c.APIVersion, APIVersion)
	case c.Kind != Kind:
		return fmt.Errorf("%s: kind: Unsupported value %q: want %s", c.Source, c.Kind, Kind)
	case len(c.Hosts) == 0:
		return fmt.Errorf("%s: hosts: Required value: at least one control plane", c.Source)
	}
	seen := map[string]int{}
	cps := 0
	for i := range c.Hosts {
		h := &c.Hosts[i]
		if h.Address == "" {
			return c.hostErr(i, "address: Required value")
		}
		switch h.Role {
		case RoleControlPlane:
			cps++
		case RoleWorker:
		case "":
			return c.hostErr(i, "role: Required value: %s or %s", RoleControlPlane, RoleWorker)
		default:
			return c.hostErr(i, "role: Unsupported value %q: %s or %s", h.Role, RoleControlPlane, RoleWorker)
		}
		if h.NodeName != "" {
			if errs := validation.IsDNS1123Subdomain(h.NodeName); len(errs) > 0 {
				return c.hostErr(i, "nodeName: Invalid value %q: %s", h.NodeName, strings.Join(errs, "; "))
			}
		}
		if h.AdvertiseAddress != "" && net.ParseIP(h.AdvertiseAddress) == nil {
			return c.hostErr(i, "advertiseAddress: Invalid value %q: an IP address", h.AdvertiseAddress)
		}
		if h.Root == "" {
			h.Root = "/"
		}
		if !path.IsAbs(h.Root) {
			return c.hostErr(i, "root: Invalid value %q: an absolute path", h.Root)
		}
		if err := h.SSH.defaults(); err != nil {
			return c.hostErr(i, "ssh: %v", err)
		}
		// One node per address and root; one node per name.
		key := h.SSH.target(h.Address) + " " + h.Root
		if j, dup := seen[key]; dup {
			return c.hostErr(i, "address: Duplicate value %q: hosts[%d] is the same node", h.Address, j)
		}
		seen[key] = i
		if h.NodeName != "" {
			if j, dup := seen["name "+h.NodeName]; dup {
				return c.hostErr(i, "nodeName: Duplicate value %q: hosts[%d] has it", h.NodeName, j)
			}
			seen["name "+h.NodeName] = i
		}
	}
	if cps == 0 {
		return fmt.Errorf("%s: hosts: at least one host must have role %s", c.Source, RoleControlPlane)
	}
	if strings.TrimSpace(c.Kubeadm) != "" {
		kc, err := config.Parse(c.Source+" (kubeadm)", []byte(c.Kubeadm))
		if err != nil {
			return err
		}
		if kc.Join != nil {
			return fmt.Errorf("%s: kubeadm: a JoinConfiguration is made for each host by apply; leave it out", c.Source)
		}
		c.KubeadmConfig = kc
	}
	return nil
}

func (s *SSH) defaults() error {
	if s.User == "" {
		s.User = "root"
	}
	if s.Port == 0 {
		s.Port = 22
	}
	if s.Port < 1 || s.Port > 65535 {
		return fmt.Errorf("port: Invalid value %d", s.Port)
	}
	if s.KeyPath != "" {
		s.KeyPath = expandHome(s.KeyPath)
	}
	if s.KnownHosts == "" {
		s.KnownHosts = "~/.ssh/known_hosts"
	}
	s.KnownHosts = expandHome(s.KnownHosts)
	if b := s.Bastion; b != nil {
		if b.Address == "" {
			return fmt.Errorf("bastion.address: Required value")
		}
		if b.User == "" {
			b.User = s.User
		}
		if b.Port == 0 {
			b.Port = 22
		}
		if b.KeyPath == "" {
			b.KeyPath = s.KeyPath
		}
		b.KeyPath = expandHome(b.KeyPath)
	}
	return nil
}

// target is user@host:port.
func (s SSH) target(address string) string {
	return s.User + "@" + net.JoinHostPort(address, strconv.Itoa(s.Port))
}

func expandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return p
}

// ControlPlanes are the control-plane hosts, in the file's order.
func (c *Cluster) ControlPlanes() []*Host { return c.withRole(RoleControlPlane) }

// Workers are the worker hosts, in the file's order.
func (c *Cluster) Workers() []*Host { return c.withRole(RoleWorker) }

func (c *Cluster) withRole(role string) []*Host {
	var out []*Host
	for i := range c.Hosts {
		if c.Hosts[i].Role == role {
			out = append(out, &c.Hosts[i])
		}
	}
	return out
}

// Name is how progress lines name a host: its node name, else its
// address (and root, when several nodes share an address).
func (h *Host) Name() string {
	if h.NodeName != "" {
		return h.NodeName
	}
	if h.Root != "/" {
		return h.Address + ":" + h.Root
	}
	return h.Address
}
