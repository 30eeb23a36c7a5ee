package config

import (
	"errors"
	"strings"
	"testing"
)

var testHost = Host{Hostname: "node-a", DefaultIP: "10.10.0.2", DefaultIPv4: "10.10.0.2", DefaultIPv6: "fd00:10::2"}

const validInit = `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 10.10.0.2
nodeRegistration:
  name: node-a
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.37.2
controlPlaneEndpoint: cp.example.com:6443
networking:
  podSubnet: 10.244.0.0/16
  serviceSubnet: 10.96.0.0/12
`

func parseAndValidate(t *testing.T, doc string) error {
	t.Helper()
	c, err := Parse("test.yaml", []byte(doc))
	if err != nil {
		return err
	}
	if c.Init != nil || c.Cluster != nil {
		if err := c.DefaultInit(testHost); err != nil {
			return err
		}
	}
	if c.Join != nil {
		c.DefaultJoin(testHost)
	}
	if c.Reset != nil {
		c.DefaultReset()
	}
	return c.Validate()
}

func TestValidConfig(t *testing.T) {
	if err := parseAndValidate(t, validInit); err != nil {
		t.Fatalf("valid config rejected: %v", err)
	}
}

func TestConfigRules(t *testing.T) {
	cluster := func(body string) string {
		return "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n" + body
	}
	init := func(body string) string {
		return "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n" + body
	}
	cases := []struct {
		name string
		doc  string
		want []string // substrings the error must contain
	}{
		{"unknown kind", "apiVersion: kubeadm.k8s.io/v1beta4\nkind: MasterConfiguration\n", []string{"document 1", "kind: Unsupported value", "MasterConfiguration"}},
		{"unknown apiVersion", "apiVersion: kubeadm.k8s.io/v1beta9\nkind: InitConfiguration\n", []string{"document 1", "apiVersion: Unsupported value", "v1beta9"}},
		{"old apiVersion", "apiVersion: kubeadm.k8s.io/v1beta3\nkind: InitConfiguration\n", []string{"kubeadm config migrate"}},
		{"unknown group", "apiVersion: example.com/v1\nkind: Foo\n", []string{"apiVersion: Unsupported value", "example.com/v1"}},
		{"missing kind", "apiVersion: kubeadm.k8s.io/v1beta4\n", []string{"kind: Required value"}},
		{"unknown field", cluster("networking:\n  podSubnett: 10.244.0.0/16\n"), []string{"document 1 (ClusterConfiguration", `unknown field "networking.podSubnett"`}},
		{"unknown field in second document", validInit + "---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: ResetConfiguration\nbogus: 1\n", []string{"document 3 (ResetConfiguration, line 16)", `unknown field "bogus"`}},
		{"duplicate kind", init("") + "---\n" + init(""), []string{"document 2", "given twice"}},
		{"malformed YAML", cluster("networking:\n  podSubnet: [10.0.0.0/8\n"), []string{"malformed YAML", "line"}},
		{"malformed YAML line is absolute", "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n---\n" + "apiVersion: v1\nkind: x\n  bad: indent\n", []string{"document 2 (line 4)", "malformed YAML", "line 6"}},
		{"not a mapping", "- a\n- b\n", []string{"expected a mapping"}},
		{"invalid advertise IP", init("localAPIEndpoint:\n  advertiseAddress: 10.0.0.300\n"), []string{"localAPIEndpoint.advertiseAddress", "10.0.0.300", "valid IP"}},
		{"loopback advertise IP", init("localAPIEndpoint:\n  advertiseAddress: 127.0.0.1\n"), []string{"localAPIEndpoint.advertiseAddress", "loopback"}},
		{"invalid bind port", init("localAPIEndpoint:\n  bindPort: 70000\n"), []string{"localAPIEndpoint.bindPort"}},
		{"invalid pod CIDR", cluster("networking:\n  podSubnet: 10.244.0.0/33\n"), []string{"networking.podSubnet", "valid CIDR"}},
		{"CIDR host bits", cluster("networking:\n  podSubnet: 10.244.1.0/16\n"), []string{"networking.podSubnet", "host bits"}},
		{"invalid service CIDR", cluster("networking:\n  serviceSubnet: banana\n"), []string{"networking.serviceSubnet", "valid CIDR"}},
		{"pod and service CIDRs overlap", cluster("networking:\n  podSubnet: 10.0.0.0/8\n  serviceSubnet: 10.96.0.0/12\n"), []string{"networking.podSubnet", "overlaps with the service subnet 10.96.0.0/12"}},
		{"service CIDR too small", cluster("networking:\n  serviceSubnet: 10.96.0.0/29\n"), []string{"networking.serviceSubnet", "too small"}},
		{"service CIDR too large", cluster("networking:\n  serviceSubnet: 10.0.0.0/8\n"), []string{"networking.serviceSubnet", "too large"}},
		{"dual-stack needs two families", cluster("networking:\n  serviceSubnet: 10.96.0.0/16,10.97.0.0/16\n"), []string{"networking.serviceSubnet", "one IPv4 and one IPv6"}},
		{"endpoint bad port", cluster("controlPlaneEndpoint: cp.example.com:99999\n"), []string{"controlPlaneEndpoint", "port"}},
		{"endpoint bad host", cluster("controlPlaneEndpoint: bad_host!:6443\n"), []string{"controlPlaneEndpoint", "neither an IP address nor a DNS name"}},
		{"endpoint empty host", cluster("controlPlaneEndpoint: ':6443'\n"), []string{"controlPlaneEndpoint", "host is empty"}},
		{"unsupported version", cluster("kubernetesVersion: v1.30.0\n"), []string{"kubernetesVersion", "Unsupported value", "v1.37.2"}},
		{"version label", cluster("kubernetesVersion: stable-1\n"), []string{"kubernetesVersion", "Unsupported value"}},
		{"bad token in file", init("bootstrapTokens:\n- token: abc.def\n"), []string{"document 1 (InitConfiguration", "abc.def"}},
		{"bad token usage", init("bootstrapTokens:\n- token: abcdef.0123456789abcdef\n  usages: [fly]\n"), []string{"bootstrapTokens.0.usages", "invalid bootstrap token usage string: fly"}}, // kubeadm's rule and words
		{"unknown encryption algorithm", cluster("encryptionAlgorithm: RSA-1024\n"), []string{"encryptionAlgorithm", "Invalid encryption algorithm", "RSA-1024", "ECDSA-P256"}},               // kubeadm's
		// Rules only kubeadm's validation has, run by kubeboot too.
		{"pod subnet smaller than a node's", cluster("networking:\n  podSubnet: 10.244.0.0/25\n"), []string{"networking.podSubnet", "smaller than the size of node subnet"}},
		{"token TTL and expiry both", init("bootstrapTokens:\n- token: abcdef.0123456789abcdef\n  ttl: 1h\n  expires: \"2030-01-01T00:00:00Z\"\n"), []string{"bootstrapTokens.0", "mutually exclusive"}},
		{"invalid cert SAN", cluster("apiServer:\n  certSANs: [\"not a name\"]\n"), []string{"apiServer.certSANs[0]"}},
		{"relative cert dir", cluster("certificatesDir: pki\n"), []string{"certificatesDir", "absolute"}},
		{"negative validity", cluster("certificateValidityPeriod: -1h\n"), []string{"certificateValidityPeriod", "positive"}},
		{"local and external etcd", cluster("etcd:\n  local: {dataDir: /var/lib/etcd}\n  external: {endpoints: [\"https://10.0.0.1:2379\"]}\n"), []string{"etcd", "not both"}},
		{"external etcd needs TLS files", cluster("etcd:\n  external:\n    endpoints: [\"https://10.0.0.1:2379\"]\n"), []string{"etcd.external.caFile", "Required"}},
		{"dual-stack pods, single-stack services", cluster("networking:\n  podSubnet: 10.244.0.0/16,fd00:10:244::/56\n"), []string{"networking.serviceSubnet", "dual-stack service network"}},
		{"dual-stack services, single-stack pods", cluster("networking:\n  serviceSubnet: 10.96.0.0/16,fd00:10:96::/112\n"), []string{"networking.podSubnet", "dual-stack pod network"}},
		{"IPv6 pods, IPv4 services", cluster("networking:\n  podSubnet: fd00:10:244::/56\n"), []string{"networking.serviceSubnet", "not of the pod network's family"}},
		{"IPv6 pod subnet too small for /64 nodes", cluster("networking:\n  podSubnet: fd00:10:244::/96\n  serviceSubnet: fd00:10:96::/112\n"), []string{"networking.podSubnet", "smaller than the size of node subnet with mask 64"}},
		{"IPv6 pod subnet too large for /80 nodes", cluster("controllerManager:\n  extraArgs:\n  - {name: node-cidr-mask-size-ipv6, value: \"80\"}\nnetworking:\n  podSubnet: fd00:10:244::/56\n  serviceSubnet: fd00:10:96::/112\n"), []string{"networking.podSubnet", "difference is greater than 16"}},
		{"CRI socket over TCP", init("nodeRegistration:\n  criSocket: tcp://10.0.0.1:10000\n"), []string{"nodeRegistration.criSocket", `only URL scheme "unix"`}},
		{"CRI socket by relative path", init("nodeRegistration:\n  criSocket: unix://run/containerd.sock\n"), []string{"nodeRegistration.criSocket", "absolute path"}},
		{"bad node name", init("nodeRegistration:\n  name: Node_A\n"), []string{"nodeRegistration.name"}},
		{"bad certificate key", init("certificateKey: abcd\n"), []string{"certificateKey", "64 hexadecimal"}},
		{"join without discovery", "apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\ndiscovery: {}\n", []string{"JoinConfiguration", "discovery", "Required"}},
		{"join bad hash", "apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\ndiscovery:\n  bootstrapToken:\n    token: abcdef.0123456789abcdef\n    apiServerEndpoint: 10.0.0.1:6443\n    caCertHashes: [md5:1234]\n", []string{"discovery.bootstrapToken.caCertHashes[0]"}},
		{"join endpoint without port", "apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\ndiscovery:\n  bootstrapToken:\n    token: abcdef.0123456789abcdef\n    apiServerEndpoint: 10.0.0.1\n    unsafeSkipCAVerification: true\n", []string{"discovery.bootstrapToken.apiServerEndpoint", "host:port"}},
		{"kubelet unknown field", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriverr: cgroupfs\n", []string{"KubeletConfiguration", `unknown field "cgroupDriverr"`}},
		{"kube-proxy wrong version", "apiVersion: kubeproxy.config.k8s.io/v1beta1\nkind: KubeProxyConfiguration\n", []string{"kubeproxy.config.k8s.io/v1alpha1"}},
		{"empty file", "# nothing\n", []string{"no configuration documents"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := parseAndValidate(t, tc.doc)
			if err == nil {
				t.Fatalf("accepted, want error containing %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			var de *DocError
			var ve *ValidationError
			if !errors.As(err, &de) && !errors.As(err, &ve) {
				t.Errorf("error %T is not a document error", err)
			}
		})
	}
}

func TestDefaultsPrintedAreValid(t *testing.T) {
	initDefaults, err := InitDefaults()
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*Config{"init": initDefaults, "join": JoinDefaults(), "reset": ResetDefaults()} {
		t.Run(name, func(t *testing.T) {
			out, err := c.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if err := parseAndValidate(t, string(out)); err != nil {
				t.Fatalf("printed defaults do not validate: %v\n%s", err, out)
			}
		})
	}
	out, _ := initDefaults.Marshal()
	for _, want := range []string{"kind: InitConfiguration", "kind: ClusterConfiguration", "kubernetesVersion: v1.37.2", "token: abcdef.0123456789abcdef", "encryptionAlgorithm: RSA-2048"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("init defaults lack %q:\n%s", want, out)
		}
	}
}

// FuzzParse checks that no input makes the parser panic and that whatever
// it accepts marshals back into something it accepts again.
func FuzzParse(f *testing.F) {
	f.Add([]byte(validInit))
	f.Add([]byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\n"))
	f.Add([]byte("---\n---\n"))
	f.Add([]byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: cgroupfs\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz", data)
		if err != nil {
			return
		}
		_ = c.Validate()
		out, err := c.Marshal()
		if err != nil {
			t.Fatalf("accepted input does not marshal: %v", err)
		}
		if _, err := Parse("fuzz-roundtrip", out); err != nil {
			t.Fatalf("marshalled config does not parse again: %v\n%s", err, out)
		}
	})
}

// TestCRISocketWithoutScheme: a socket given as a bare path gets kubeadm's
// "unix://" prefix, so the kubelet and the image importer see one form.
func TestCRISocketWithoutScheme(t *testing.T) {
	c, err := Parse("test.yaml", []byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nnodeRegistration:\n  criSocket: /run/containerd/containerd.sock\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.DefaultInit(testHost); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("bare socket path rejected: %v", err)
	}
	if got, want := c.Init.NodeRegistration.CRISocket, "unix:///run/containerd/containerd.sock"; got != want {
		t.Errorf("criSocket = %q, want %q", got, want)
	}
	c.DefaultJoin(testHost)
	c.Join.NodeRegistration.CRISocket = ""
	c.DefaultJoin(testHost)
	if c.Join.NodeRegistration.CRISocket != DefaultCRISocket {
		t.Errorf("join criSocket = %q, want the default", c.Join.NodeRegistration.CRISocket)
	}
}

// The node subnets' size the controller-manager is given decides which
// pod subnets fit, as kubeadm reads it.
func TestPodSubnetFitsNodeMask(t *testing.T) {
	doc := "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\ncontrollerManager:\n  extraArgs:\n  - {name: node-cidr-mask-size-ipv6, value: \"80\"}\nnetworking:\n  podSubnet: fd00:10:244::/72\n  serviceSubnet: fd00:10:96::/112\n"
	if err := parseAndValidate(t, doc); err != nil {
		t.Fatalf("a /72 IPv6 pod subnet cut into /80 node subnets refused: %v", err)
	}
}

// A loopback advertise address is refused, unless the control plane runs
// alone (ControlPlaneOnly).
func TestLoopbackControlPlaneOnly(t *testing.T) {
	for _, alone := range []bool{false, true} {
		c, err := Parse("test.yaml", []byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nlocalAPIEndpoint:\n  advertiseAddress: 127.0.0.1\n"))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.DefaultInit(testHost); err != nil {
			t.Fatal(err)
		}
		c.ControlPlaneOnly = alone
		err = c.Validate()
		if alone && err != nil {
			t.Errorf("a control plane alone on loopback: %v", err)
		}
		if !alone && (err == nil || !strings.Contains(err.Error(), "loopback")) {
			t.Errorf("a node on loopback: got %v, want it refused", err)
		}
	}
}
