package apply

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeboot/kubeboot/pkg/clusterfile"
)

// The plan resets a host that a failed run left with a node's state, and
// refuses, before anything changes, to reset one that is a working node
// under another name, the primary, or a node of another cluster; a Node
// not in the file is left alone unless pruned, and never when it is not
// in apply's record of hosts or its recorded host is one of the file's.
// A Node's own annotation never says where prune goes: one forged to
// point at another host (one the operator's key reaches, not in the
// file) does not make prune reset that host.
func TestPlanRefusesToResetWorkingNodes(t *testing.T) {
	node := func(name, ip, annotation string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
		if annotation != "" {
			n.Annotations = map[string]string{legacyHostAnnotation: annotation}
		}
		return n
	}
	host := func(addr, role, name string, state bool, ca string) *applyHost {
		return &applyHost{Host: &clusterfile.Host{Address: addr, Role: role, NodeName: name, Root: "/"}, node: name, state: state, ca: ca}
	}
	run := func(prune bool, hosts ...*applyHost) (string, *applyPlan, error) {
		var out strings.Builder
		a := &applyRun{o: Options{Cluster: &clusterfile.Cluster{}, Out: &out, Prune: prune}, hosts: hosts}
		a.primary = hosts[0]
		a.primary.admin = true
		a.nodes = map[string]*corev1.Node{
			"cp1": node("cp1", "10.0.0.1", ""),
			"w1":  node("w1", "10.0.0.2", ""),
			// Made by apply on 10.0.0.9; its kubelet rewrote its
			// annotation to point at 10.0.0.50.
			"old": node("old", "10.0.0.9", `{"Address":"10.0.0.50","Role":"worker","NodeName":"old","Root":"/decoy"}`),
			// Not made by apply; its annotation says it was, on 10.0.0.51.
			"forged": node("forged", "10.0.0.8", `{"Address":"10.0.0.51","Role":"worker","NodeName":"forged","Root":"/"}`),
			// Recorded on a host of the file.
			"fake":    node("fake", "10.0.0.6", ""),
			"kubeadm": node("kubeadm", "10.0.0.7", ""),
		}
		a.hostsRecord = hostsRecord{
			"cp1":  `{"Address":"10.0.0.1","Role":"control-plane","NodeName":"cp1","Root":"/"}`,
			"old":  `{"Address":"10.0.0.9","Role":"worker","NodeName":"old","Root":"/","SSH":{"User":"root","Port":22}}`,
			"fake": `{"Address":"10.0.0.2","Role":"worker","NodeName":"cp1","Root":"/"}`,
			"gone": `{"Address":"10.0.0.10","Role":"worker","NodeName":"gone","Root":"/"}`,
		}
		p, err := a.plan()
		return out.String(), p, err
	}
	// A failed join on a new host: reset, then join.
	_, p, err := run(false, host("10.0.0.1", "control-plane", "cp1", true, "A"), host("10.0.0.2", "worker", "w1", true, "A"), host("10.0.0.3", "worker", "w2", true, "A"))
	if err != nil || len(p.resets) != 1 || p.resets[0].node != "w2" || len(p.workers) != 1 || len(p.prune) != 0 {
		t.Errorf("a failed join: %v, %+v", err, p)
	}
	for what, hosts := range map[string][]*applyHost{
		"is Node \"w1\"'s":          {host("10.0.0.1", "control-plane", "cp1", true, "A"), host("10.0.0.2", "worker", "renamed", true, "A")},
		"holds the cluster's admin": {host("10.0.0.1", "control-plane", "renamed", true, "A")},
		"a node of another cluster": {host("10.0.0.1", "control-plane", "cp1", true, "A"), host("10.0.0.4", "worker", "w3", true, "B")},
	} {
		if _, _, err := run(false, hosts...); err == nil || !strings.Contains(err.Error(), what) {
			t.Errorf("%s: %v", what, err)
		}
	}
	// Pruning: only "old" (recorded by apply, its host not in the file),
	// at the host the record has, not the one its annotation says.
	out, p, err := run(true, host("10.0.0.1", "control-plane", "cp1", true, "A"), host("10.0.0.2", "worker", "w1", true, "A"))
	if err != nil || len(p.prune) != 1 || p.prune[0].NodeName != "old" || p.prune[0].Address != "10.0.0.9" || p.prune[0].Root != "/" {
		t.Errorf("prune: %v, %+v", err, p.prune)
	}
	for _, want := range []string{
		"[forged] in the cluster, not in the file, not in apply's record of hosts (ConfigMap kube-system/kubeboot-apply-hosts): left alone, never reset by --prune (its Node's kubeboot.io/apply-host annotation",
		"[kubeadm] in the cluster, not in the file, not in apply's record of hosts",
		"[fake] in the cluster, not in the file: left alone (its recorded host 10.0.0.2 is",
		"[old] plan: not in the file any more: drain, reset root@10.0.0.9:22,",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the plan does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "10.0.0.50") || strings.Contains(out, "10.0.0.51") {
		t.Errorf("the plan names a host from a Node's annotation:\n%s", out)
	}
	// The same as data: every Node not in the file, pruned or left alone
	// with why, at the host the record has.
	others := map[string]OtherNode{}
	for _, o := range p.OtherNodes {
		others[o.Node] = o
	}
	if o := others["old"]; !o.Prune || o.Host != "root@10.0.0.9:22" || o.LeftAlone != "" {
		t.Errorf("old: %+v, want pruned at root@10.0.0.9:22", o)
	}
	for _, n := range []string{"forged", "kubeadm", "fake"} {
		if o := others[n]; o.Prune || o.LeftAlone == "" || strings.Contains(o.Host, "10.0.0.5") {
			t.Errorf("%s: %+v, want left alone, with why", n, o)
		}
	}
	if len(p.OtherNodes) != 4 || len(p.Hosts) != 2 || p.Hosts[0].Action != Nothing || p.Hosts[1].Node != "w1" {
		t.Errorf("the plan's data: %+v", p.Plan)
	}
}

// TestRecordHosts: apply records the host of each node of the file in a
// ConfigMap of kube-system, keeps the entries of nodes still in the
// cluster that the file no longer has (prune reaches them there), drops
// those of nodes gone from both, and takes the legacy annotation off the
// Nodes it records; prune takes the pruned nodes out.
func TestRecordHosts(t *testing.T) {
	ctx := context.Background()
	old := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "old"}}
	cp1 := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cp1", Annotations: map[string]string{legacyHostAnnotation: `{"Address":"10.0.0.50"}`, "other": "kept"}}}
	c := fake.NewClientset(cp1, old, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: hostsConfigMap, Namespace: "kube-system"}, Data: map[string]string{
		"old":  `{"Address":"10.0.0.9","Role":"worker","NodeName":"old","Root":"/"}`,
		"gone": `{"Address":"10.0.0.10","Role":"worker","NodeName":"gone","Root":"/"}`,
	}})
	hosts := []*applyHost{
		{Host: &clusterfile.Host{Address: "10.0.0.1", Role: "control-plane", Root: "/", SSH: clusterfile.SSH{User: "root", Port: 22, Bastion: &clusterfile.Bastion{Address: "203.0.113.5"}}}, node: "cp1"},
		{Host: &clusterfile.Host{Address: "10.0.0.2", Role: "worker", Root: "/srv/w1"}, node: "w1"},
		{Host: &clusterfile.Host{Address: "10.0.0.3", Role: "worker", Root: "/"}, node: "w2", err: errors.New("join failed")},
	}
	a := &applyRun{o: Options{Cluster: &clusterfile.Cluster{}, Out: io.Discard}, hosts: hosts, client: c,
		nodes: map[string]*corev1.Node{"cp1": cp1, "old": old}}
	if err := a.recordHosts(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := readHostsRecord(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(r)); !slices.Equal(got, []string{"cp1", "old", "w1"}) {
		t.Errorf("recorded %v, want cp1, old (still a Node) and w1 (w2's join failed, gone is gone)", got)
	}
	h, recorded, err := r.host("cp1")
	if err != nil || !recorded || h.Address != "10.0.0.1" || h.SSH.Bastion == nil || h.SSH.Bastion.Address != "203.0.113.5" || h.NodeName != "cp1" {
		t.Errorf("cp1's host: %+v, %v, %v", h, recorded, err)
	}
	if h, _, _ := r.host("w1"); h == nil || h.Root != "/srv/w1" {
		t.Errorf("w1's host: %+v", h)
	}
	n, err := c.CoreV1().Nodes().Get(ctx, "cp1", metav1.GetOptions{})
	if err != nil || n.Annotations[legacyHostAnnotation] != "" || n.Annotations["other"] != "kept" {
		t.Errorf("cp1's annotations: %v, %v", n.Annotations, err)
	}
	// Prune takes old out.
	if err := a.forgetHosts(ctx, []string{"old"}); err != nil {
		t.Fatal(err)
	}
	if r, _ := readHostsRecord(ctx, c); r["old"] != "" || r["cp1"] == "" {
		t.Errorf("after prune: %v", r)
	}
	// A first apply creates the ConfigMap.
	c = fake.NewClientset()
	a.client, a.nodes = c, nil
	if err := a.recordHosts(ctx); err != nil {
		t.Fatal(err)
	}
	if r, _ := readHostsRecord(ctx, c); len(r) != 2 {
		t.Errorf("a first apply recorded %v", r)
	}
}

// TestPlanRedoesWhatDidNotFinish: a host whose init or join apply started
// and did not see complete is reset and redone, also when its Node
// registered (its Node is deleted after the reset); one with a completed
// record, or with no record (made by hand, or by an older apply), is left
// alone in the cluster; a control plane whose step did not finish is not
// the one the cluster is reached through.
func TestPlanRedoesWhatDidNotFinish(t *testing.T) {
	done := time.Now()
	host := func(addr, role, name string, r *hostRecord) *applyHost {
		return &applyHost{Host: &clusterfile.Host{Address: addr, Role: role, NodeName: name, Root: "/"}, node: name, state: true, admin: role == "control-plane", ca: "A", record: r}
	}
	hosts := []*applyHost{
		host("10.0.0.1", "control-plane", "cp1", &hostRecord{Step: "join"}), // listed first, did not finish
		host("10.0.0.2", "control-plane", "cp2", &hostRecord{Step: "init", Completed: &done}),
		host("10.0.0.3", "worker", "w1", &hostRecord{Step: "join"}),
		host("10.0.0.4", "worker", "w2", &hostRecord{Step: "join", Completed: &done}),
		host("10.0.0.5", "worker", "w3", nil),
	}
	var out strings.Builder
	a := &applyRun{o: Options{Cluster: &clusterfile.Cluster{}, Out: &out}, hosts: hosts}
	if a.primary = a.firstDoneControlPlane(); a.primary != hosts[1] {
		t.Fatalf("the primary is %v, want cp2", a.primary.node)
	}
	a.nodes = map[string]*corev1.Node{}
	for i, n := range []string{"cp1", "cp2", "w1", "w2", "w3"} {
		a.nodes[n] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.0.0.%d", i+1)}}}}
	}
	p, err := a.plan()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(p.unchanged, " "); got != "cp2 w2 w3" {
		t.Errorf("unchanged: %s, want cp2 w2 w3", got)
	}
	var resets []string
	for _, h := range p.resets {
		resets = append(resets, h.node)
	}
	if got := strings.Join(resets, " "); got != "cp1 w1" || strings.Join(p.staleNodes, " ") != "cp1 w1" || len(p.controlPlanes) != 1 || len(p.workers) != 1 {
		t.Errorf("resets %s, stale Nodes %v, %d control planes and %d workers to join", got, p.staleNodes, len(p.controlPlanes), len(p.workers))
	}
	if !strings.Contains(out.String(), "[w1] plan: its join did not finish (/var/lib/kubeboot/apply.json records no completion): reset, then join as a worker (its Node deleted after the reset)") {
		t.Errorf("the plan:\n%s", out.String())
	}
	// The same as data, one step per host in the file's order.
	var got []string
	for _, st := range p.Hosts {
		got = append(got, fmt.Sprintf("%s:%s:%t:%t", st.Node, st.Action, st.Reset != "", st.DeleteNode))
	}
	want := "cp1:join-control-plane:true:true cp2:nothing:false:false w1:join-worker:true:true w2:nothing:false:false w3:nothing:false:false"
	if strings.Join(got, " ") != want {
		t.Errorf("the plan's steps:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}
