package cli

import (
	"bufio"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeboot/kubeboot/cluster"
	"github.com/kubeboot/kubeboot/pkg/clusterfile"
)

const applyLong = `Bring up, or converge, the whole cluster a cluster file describes, over SSH,
from this machine: kubeboot's own binary carries everything every host needs,
so nothing is downloaded anywhere.

In order, with a progress line per host and step:
  1. connect to every host (its key checked against known_hosts) and read
     its state;
  2. copy this kubeboot binary to <root>/usr/local/bin/kubeboot on every host
     to change (skipped where the same sha256 is there), in parallel;
  3. run preflight on every host to change: nothing else changes anywhere
     until every host passes;
  4. init the first control plane, join the other control planes one at a
     time, then the workers in parallel;
  5. wait until every node is Ready and write the admin kubeconfig, its
     server an address this machine reaches.

Hosts already in the cluster are left alone: running apply again changes
nothing, and adds the hosts new to the file. A host removed from the file is
left alone, unless --prune: its node is drained, the host reset over SSH and
the Node deleted. Prune reaches the host as apply recorded it when it made the
node, in the ConfigMap kube-system/kubeboot-apply-hosts, which only the
cluster's admins can write; a node not in that record is never reset (a Node's
annotations, which its kubelet can rewrite, are not trusted). A join that fails
on one host leaves the others to join; apply again resets what it left and
joins it. Each host keeps apply's record of its init or join
(<root>/var/lib/kubeboot/apply.json): one that started and did not complete
(it failed half-way, or apply was cancelled) is reset and done again by the
next apply, which says so in its plan. Cancelled (Ctrl-C), apply says which
hosts may have changed: those whose step had started and had not finished.
Tokens and certificate keys are made here and given to each host's kubeboot on
its standard input: none is on a command line, in a file apply writes, or
printed (a join keeps the token in its bootstrap-kubelet.conf, 0600, until the
kubelet has its certificate, as kubeadm's does).

The file (apiVersion kubeboot.io/v1alpha1, kind Cluster):

  apiVersion: kubeboot.io/v1alpha1
  kind: Cluster
  hosts:
  - {address: 10.0.0.1, role: control-plane, nodeName: cp1, ssh: {user: root, keyPath: ~/.ssh/id_ed25519}}
  - {address: 10.0.0.2, role: worker, nodeName: w1, ssh: {user: admin}}   # sudo; the SSH agent
  - address: 10.0.1.7
    role: worker
    ssh: {bastion: {address: 203.0.113.5}}                                   # through a jump host
  kubeadm: |          # the cluster's kubeadm v1beta4 documents, as init --config reads them
    apiVersion: kubeadm.k8s.io/v1beta4
    kind: ClusterConfiguration
    networking: {podSubnet: 10.244.0.0/16}

Host fields: address, role (control-plane or worker), nodeName (the host's
hostname when empty), advertiseAddress (when other nodes reach it elsewhere),
root (kubeboot's --root), ssh: user (root; otherwise commands run with
sudo -n), port (22), keyPath (else the SSH agent), knownHosts
(~/.ssh/known_hosts), bastion {address, user, port, keyPath}.

`

func newApplyCommand(g *GlobalFlags, s Streams) *cobra.Command {
	var file, kubeconfigOut, output string
	var dryRun, prune bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "apply -f CLUSTER-FILE",
		Short: "Bring up, grow or converge a whole cluster from one file, over SSH",
		Long:  applyLong,
		Example: `  kubeboot apply -f cluster.yaml             # writes cluster.kubeconfig next to it
  kubeboot apply -f cluster.yaml --dry-run   # the plan, changing nothing
  kubeboot apply -f cluster.yaml --dry-run -o json   # the plan as data
  kubeboot apply -f cluster.yaml --prune     # also removes the hosts taken out of the file
  kubeboot reset -f cluster.yaml             # every host, workers first`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return fmt.Errorf("-f CLUSTER-FILE is required")
			}
			c, err := clusterfile.Read(file)
			if err != nil {
				return err
			}
			if kubeconfigOut == "" {
				kubeconfigOut = defaultKubeconfigOut(file)
			}
			if err := checkOutput(output, "json", "yaml"); err != nil {
				return err
			}
			progress := s.Out
			if output != "" {
				// The result alone on standard output, for a program.
				progress = s.Err
			}
			res, err := cluster.Apply(cmd.Context(), cluster.ApplyOptions{Cluster: c, DryRun: dryRun, AdminKubeconfig: kubeconfigOut, Timeout: timeout, Prune: prune, Out: progress})
			if output != "" && res != nil {
				if perr := printAs(s.Out, output, res); err == nil {
					err = perr
				}
			}
			if err != nil || dryRun || output != "" {
				return err
			}
			removed := ""
			if len(res.Pruned) > 0 {
				removed = fmt.Sprintf(", %s removed", nodeCount(len(res.Pruned)))
			}
			fmt.Fprintf(s.Out, "\nThe cluster of %s runs: %s added, %d already there%s.\n\n  kubectl --kubeconfig %s get nodes\n\n", file, nodeCount(len(res.Added)), len(res.Unchanged), removed, res.AdminKubeconfig)
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "The cluster file")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "Connect to every host, read its state and print the plan; change nothing")
	cmd.Flags().StringVarP(&output, "output", "o", "", "Print the result (the plan, the nodes added, unchanged and removed) as 'json' or 'yaml' on standard output, the progress lines on standard error")
	cmd.Flags().StringVar(&kubeconfigOut, "admin-kubeconfig", "", "Where to write the admin kubeconfig (default: the cluster file's name with .kubeconfig, next to it)")
	cmd.Flags().BoolVar(&prune, "prune", false, "Remove the nodes apply made on hosts no longer in the file: drain each, reset the host over SSH (as apply recorded it in kube-system/kubeboot-apply-hosts) and delete its Node; workers first")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "How long to wait for every node to be Ready")
	return cmd
}

// defaultKubeconfigOut is cluster.yaml's cluster.kubeconfig.
func defaultKubeconfigOut(file string) string {
	return strings.TrimSuffix(file, filepath.Ext(file)) + ".kubeconfig"
}

// resetHosts is `kubeboot reset -f CLUSTER-FILE`: every host of the file.
func resetHosts(cmd *cobra.Command, s Streams, file string, force bool) error {
	c, err := clusterfile.Read(file)
	if err != nil {
		return err
	}
	if !force {
		fmt.Fprintf(s.Out, "[reset] WARNING: every host of %s (%d) will be reset: its node removed from the cluster and everything kubeboot made on it.\n[reset] Are you sure you want to proceed? [y/N]: ", file, len(c.Hosts))
		answer, _ := bufio.NewReader(s.In).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			return fmt.Errorf("aborted: nothing was reset")
		}
	}
	return cluster.ResetHosts(cmd.Context(), cluster.ResetHostsOptions{Cluster: c, Out: s.Out})
}

// nodeCount is "1 node" or "N nodes".
func nodeCount(n int) string {
	if n == 1 {
		return "1 node"
	}
	return fmt.Sprintf("%d nodes", n)
}
