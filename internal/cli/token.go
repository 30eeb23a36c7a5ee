package cli

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/kubernetes"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	bootstraptokenv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/bootstraptoken/v1"

	"github.com/kubeboot/kubeboot/cluster"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/kube/apiclient"
	"github.com/kubeboot/kubeboot/internal/kube/discovery"
)

// tokenOptions locate the cluster for the token commands.
type tokenOptions struct {
	kubeconfig string
}

func (o *tokenOptions) file(g *GlobalFlags) string {
	if o.kubeconfig != "" {
		return o.kubeconfig
	}
	return g.FS(false, nil).Path(node.AdminKubeconfig)
}

func (o *tokenOptions) client(g *GlobalFlags) (kubernetes.Interface, error) {
	c, _, err := apiclient.FromKubeconfig(o.file(g), "")
	return c, err
}

func newTokenCommand(g *GlobalFlags, s Streams) *cobra.Command {
	o := &tokenOptions{}
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Manage bootstrap tokens",
		Long: `Bootstrap tokens authenticate a joining node to the control plane and, through
the signed cluster-info ConfigMap, let it trust the control plane in return.
A token has the form [a-z0-9]{6}.[a-z0-9]{16}: a public ID and a secret.`,
		Args: cobra.NoArgs,
	}
	cmd.PersistentFlags().StringVar(&o.kubeconfig, "kubeconfig", "", "The kubeconfig file to use for talking to the cluster (default: admin.conf under --root)")
	cmd.AddCommand(&cobra.Command{
		Use:   "generate",
		Short: "Generate and print a bootstrap token, but do not create it on the server",
		Long: `Generate and print a random bootstrap token. Use it with
"kubeboot init --token" or "kubeboot token create" to create it on the server.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			tok, err := bootstraputil.GenerateBootstrapToken()
			if err != nil {
				return err
			}
			fmt.Fprintln(s.Out, tok)
			return nil
		},
	}, newTokenCreateCommand(g, s, o), newTokenListCommand(g, s, o), newTokenDeleteCommand(g, s, o))
	return cmd
}

func newTokenCreateCommand(g *GlobalFlags, s Streams, o *tokenOptions) *cobra.Command {
	var ttl time.Duration
	var description, certificateKey string
	var usages, groups []string
	var printJoin bool
	cmd := &cobra.Command{
		Use:   "create [token]",
		Short: "Create bootstrap tokens on the server",
		Long: `Create a bootstrap token on the server. Without an argument a random token is
generated. With --print-join-command the whole join command is printed.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			to := cluster.TokenOptions{Kubeconfig: o.file(g), TTL: ttl, Description: description, Usages: usages, Groups: groups, CertificateKey: certificateKey}
			if len(args) == 1 {
				to.Token = args[0]
			}
			join, err := cluster.CreateToken(cmd.Context(), to)
			if err != nil {
				return err
			}
			if printJoin {
				fmt.Fprintln(s.Out, join)
			} else {
				fmt.Fprintln(s.Out, join.Token)
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&ttl, "ttl", 24*time.Hour, "The duration before the token is automatically deleted (e.g. 1s, 2m, 3h). If set to '0', the token will never expire")
	cmd.Flags().StringVar(&description, "description", "", "A human friendly description of how this token is used")
	cmd.Flags().StringSliceVar(&usages, "usages", bootstrapapi.KnownTokenUsages, "Describes the ways in which this token can be used")
	cmd.Flags().StringSliceVar(&groups, "groups", []string{discovery.DefaultTokenGroup}, "Extra groups that this token will authenticate as when used for authentication")
	cmd.Flags().BoolVar(&printJoin, "print-join-command", false, "Instead of printing only the token, print the full 'kubeboot join' flag needed to join the cluster using the token")
	cmd.Flags().StringVar(&certificateKey, "certificate-key", "", "With --print-join-command, print the full 'kubeboot join' flag needed to join a control-plane node")
	return cmd
}

func newTokenListCommand(g *GlobalFlags, s Streams, o *tokenOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List bootstrap tokens on the server",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client(g)
			if err != nil {
				return err
			}
			secrets, err := c.CoreV1().Secrets(metav1.NamespaceSystem).List(cmd.Context(), metav1.ListOptions{
				FieldSelector: fields.SelectorFromSet(fields.Set{"type": string(bootstrapapi.SecretTypeBootstrapToken)}).String(),
			})
			if err != nil {
				return fmt.Errorf("listing bootstrap tokens: %w", err)
			}
			w := tabwriter.NewWriter(s.Out, 10, 4, 3, ' ', 0)
			fmt.Fprintln(w, "TOKEN\tTTL\tEXPIRES\tUSAGES\tDESCRIPTION\tEXTRA GROUPS")
			now := time.Now()
			sort.Slice(secrets.Items, func(i, j int) bool { return secrets.Items[i].Name < secrets.Items[j].Name })
			for i := range secrets.Items {
				// kubeadm's own reading of a token Secret; a malformed one
				// is reported and skipped, as `kubeadm token list` does.
				t, err := bootstraptokenv1.BootstrapTokenFromSecret(&secrets.Items[i])
				if err != nil {
					fmt.Fprintf(s.Err, "warning: %v\n", err)
					continue
				}
				ttl, exp := "<forever>", "<never>"
				if t.Expires != nil {
					exp = t.Expires.UTC().Format(time.RFC3339)
					ttl = "<invalid>"
					if t.Expires.After(now) {
						ttl = duration.ShortHumanDuration(t.Expires.Sub(now))
					}
				}
				desc := t.Description
				if desc == "" {
					desc = "<none>"
				}
				usages := append([]string(nil), t.Usages...)
				sort.Strings(usages)
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", t.Token, ttl, exp, strings.Join(usages, ","), desc, strings.Join(t.Groups, ","))
			}
			return w.Flush()
		},
	}
}

func newTokenDeleteCommand(g *GlobalFlags, s Streams, o *tokenOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "delete [token-value] ...",
		Short: "Delete bootstrap tokens on the server",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client(g)
			if err != nil {
				return err
			}
			for _, a := range args {
				id, err := discovery.DeleteToken(cmd.Context(), c, a)
				if err != nil {
					return err
				}
				fmt.Fprintf(s.Out, "bootstrap token %q deleted\n", id)
			}
			return nil
		},
	}
}
