package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeboot/kubeboot/pkg/apiclient"
	"github.com/kubeboot/kubeboot/pkg/apilb"
)

func newAPIServerLBCommand(g *GlobalFlags, s Streams) *cobra.Command {
	var listen, seed, caFile, kubeconfig string
	cmd := &cobra.Command{
		Use:    "apiserver-lb",
		Short:  "Run the node-local API server load balancer (the node daemon runs it on workers)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if seed == "" || caFile == "" {
				return fmt.Errorf("--seed and --ca-file are required")
			}
			ca, err := os.ReadFile(caFile)
			if err != nil {
				return err
			}
			logf := func(format string, args ...any) {
				fmt.Fprintf(s.Out, "%s %s\n", time.Now().Format(time.RFC3339Nano), fmt.Sprintf(format, args...))
			}
			b, err := apilb.New(apilb.Options{Listen: listen, Seed: seed, CAData: ca, CAFile: caFile, FS: g.FS(false, s.Out), Logf: logf})
			if err != nil {
				return err
			}
			defer b.Close()
			logf("listening on %s, seeded with %s", b.Addr(), seed)
			if kubeconfig != "" {
				go follow(cmd.Context(), b, kubeconfig, logf)
			}
			return b.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&listen, "listen", fmt.Sprintf("127.0.0.1:%d", apilb.Port), "Address to listen on")
	cmd.Flags().StringVar(&seed, "seed", "", "host:port of the API server this node joined through")
	cmd.Flags().StringVar(&caFile, "ca-file", "", "The cluster CA, to verify the API servers with")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "Credentials that can watch EndpointSlices, through this balancer; waited for if it does not exist yet")
	return cmd
}

// follow waits for the kubeconfig (the node's, made by the kubelet's TLS
// bootstrap) and then keeps the balancer's server list current, with a
// new client each time the kubeconfig changes (a rotation of the cluster
// CA rewrites its CA).
func follow(ctx context.Context, b *apilb.Balancer, kubeconfig string, logf func(string, ...any)) {
	for ctx.Err() == nil {
		if st, err := os.Stat(kubeconfig); err == nil {
			c, _, err := apiclient.FromKubeconfig(kubeconfig, "")
			if err == nil {
				logf("following the API servers of the kubernetes EndpointSlice")
				fctx, cancel := context.WithCancel(ctx)
				go func() {
					defer cancel()
					for fctx.Err() == nil {
						select {
						case <-fctx.Done():
						case <-time.After(2 * time.Second):
						}
						if now, err := os.Stat(kubeconfig); err == nil && (!now.ModTime().Equal(st.ModTime()) || now.Size() != st.Size()) {
							logf("%s changed: following with its new credentials", kubeconfig)
							return
						}
					}
				}()
				b.Follow(fctx, c)
				cancel()
				continue
			}
			logf("loading %s: %v", kubeconfig, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}
