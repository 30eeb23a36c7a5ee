package cli

import (
	"github.com/spf13/cobra"

	"github.com/kubeboot/kubeboot/pkg/component"
	"github.com/kubeboot/kubeboot/pkg/service"
)

// ownShort says what each of kubeboot's own components does.
var ownShort = map[string]string{
	component.CertRenewer:     "Renew this control plane's certificates and kubeconfigs before they expire",
	component.EtcdSnapshotter: "Save etcd snapshots with the cluster's keys on a schedule, keeping the newest",
	component.CAAgent:         "Follow rotations of the cluster CA on this node",
	component.CSRApprover:     "Approve the kubelets' serving certificates for known nodes",
	component.APIServerLB:     "Run the node-local API server load balancer",
	component.ManifestApplier: "Apply the manifests directory of this control plane to the cluster",
	component.StorageScaler:   "Run the storage add-on's provisioner only while claims or volumes of its class exist",
}

// newOwnComponentCommands are the hidden commands that run one of
// kubeboot's own components by hand (`kubeboot --root R NAME`, under a
// debugger, or in place of the daemon's while swapped out), from the
// typed configuration in the node's spec of it: what the node daemon
// runs in its own process.
func newOwnComponentCommands(g *GlobalFlags, s Streams) []*cobra.Command {
	var cmds []*cobra.Command
	for _, name := range component.InDaemon {
		cmds = append(cmds, &cobra.Command{
			Use:    name,
			Short:  ownShort[name] + " (the node daemon runs it, from " + component.SpecPath(name) + ")",
			Hidden: true,
			Args:   cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return service.RunNamed(cmd.Context(), g.FS(false, s.Out), name, s.Out)
			},
		})
	}
	return cmds
}
