package clusterfile

import (
	"strings"
	"testing"
)

const minimal = `apiVersion: kubeboot.io/v1alpha1
kind: Cluster
hosts:
- {address: 10.0.0.1, role: control-plane, nodeName: cp1, ssh: {user: root, port: 22, keyPath: /root/.ssh/id_ed25519}}
- {address: 10.0.0.2, role: worker, nodeName: w1, ssh: {user: admin, keyPath: /root/.ssh/id_ed25519}}
kubeadm: |
  apiVersion: kubeadm.k8s.io/v1beta4
  kind: ClusterConfiguration
  networking: {podSubnet: 10.244.0.0/16}
`

// The minimal file reads, with defaults filled in.
func TestParseMinimal(t *testing.T) {
	c, err := Parse("cluster.yaml", []byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.ControlPlanes()) != 1 || len(c.Workers()) != 1 {
		t.Fatalf("roles: %+v", c.Hosts)
	}
	w := c.Workers()[0]
	if w.Root != "/" || w.SSH.Port != 22 || w.SSH.User != "admin" || !strings.HasSuffix(w.SSH.KnownHosts, "/.ssh/known_hosts") {
		t.Errorf("defaults: %+v", w)
	}
	if c.KubeadmConfig == nil || c.KubeadmConfig.Cluster.Networking.PodSubnet != "10.244.0.0/16" {
		t.Errorf("the kubeadm documents: %+v", c.KubeadmConfig)
	}
}

// Every refusal names the file and, for a host, its line.
func TestParseErrors(t *testing.T) {
	head := "apiVersion: kubeboot.io/v1alpha1\nkind: Cluster\nhosts:\n"
	for _, c := range []struct{ file, want string }{
		{"apiVersion: v1\nkind: Cluster\nhosts: []\n", `apiVersion: Unsupported value "v1"`},
		{head + "- {address: 10.0.0.1, role: control-plane, sshh: {}}\n", "c.yaml: line 4: field sshh not found"},
		{head + "- {address: 10.0.0.1, role: control-plane}\n- {address: 10.0.0.2}\n", "c.yaml: line 5: hosts[1]: role: Required value"},
		{head + "- {address: 10.0.0.1, role: boss}\n", `line 4: hosts[0]: role: Unsupported value "boss"`},
		{head + "- {address: 10.0.0.1, role: control-plane}\n- address: 10.0.0.1\n  role: worker\n", `line 5: hosts[1]: address: Duplicate value "10.0.0.1": hosts[0] is the same node`},
		{head + "- {address: 10.0.0.1, role: control-plane, nodeName: a}\n- {address: 10.0.0.2, role: worker, nodeName: a}\n", `hosts[1]: nodeName: Duplicate value "a"`},
		{head + "- {address: 10.0.0.1, role: worker}\n", "at least one host must have role control-plane"},
		{head + "- {address: 10.0.0.1, role: control-plane, nodeName: Not_A_Name}\n", "nodeName: Invalid value"},
		{head + "- {address: 10.0.0.1, role: control-plane, root: rel}\n", "root: Invalid value"},
		{head + "- {address: 10.0.0.1, role: control-plane, ssh: {bastion: {user: x}}}\n", "ssh: bastion.address: Required value"},
		{head + "- {address: 10.0.0.1, role: control-plane}\nkubeadm: |\n  apiVersion: kubeadm.k8s.io/v1beta4\n  kind: ClusterConfiguratio\n", "c.yaml (kubeadm)"},
		{head + "- {address: 10.0.0.1, role: control-plane}\nkubeadm: |\n  apiVersion: kubeadm.k8s.io/v1beta4\n  kind: JoinConfiguration\n", "a JoinConfiguration is made for each host by apply"},
	} {
		_, err := Parse("c.yaml", []byte(c.file))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\n got %v\nwant %q", c.file, err, c.want)
		}
	}
	// Two nodes on one machine under distinct roots are two hosts.
	if _, err := Parse("c.yaml", []byte(head+"- {address: 10.0.0.1, role: control-plane, root: /n1}\n- {address: 10.0.0.1, role: worker, root: /n2}\n")); err != nil {
		t.Errorf("two roots on one address: %v", err)
	}
}
