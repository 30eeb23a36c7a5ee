package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/certs/bootstrap"
	"github.com/kubeboot/kubeboot/internal/certs/kubeconfig"
	"github.com/kubeboot/kubeboot/internal/certs/pki"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/kube/apiclient"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
	"github.com/kubeboot/kubeboot/internal/runtime/daemon"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// clusterOptions locate the cluster configuration for commands that work
// on an existing node's files.
type clusterOptions struct {
	configFile string
	certDir    string
	kubeconfig string
	// prefix tags this command's lines, as kubeadm's ("renew", ...).
	prefix string
	// quiet sends those lines to stderr: the command's output is a file.
	quiet bool
}

func (o *clusterOptions) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.configFile, config.FlagConfig, "", "Path to the kubeadm v1beta4 configuration the cluster was created with (validity periods, encryption algorithm, certificates dir); by default it is read from the cluster")
	cmd.Flags().StringVar(&o.certDir, config.FlagCertDir, config.DefaultCertificatesDir, "Where certificates are stored (under --root); ignored with --config")
	cmd.Flags().StringVar(&o.kubeconfig, "kubeconfig", "", "The kubeconfig file used to read the cluster's configuration when --config is not given (default: admin.conf under --root)")
}

// load returns the configuration from --config or, as kubeadm's certs
// commands do, from the cluster's kubeadm-config ConfigMap; when the
// cluster cannot be read it falls back to the defaults and says so on
// msgs. A cluster made with ECDSA keys or custom validity periods is
// then renewed as it was made.
func (o *clusterOptions) load(g *GlobalFlags, msgs io.Writer) (*config.Config, error) {
	c := &config.Config{}
	switch {
	case o.configFile != "":
		var err error
		if c, err = config.ReadFile(o.configFile); err != nil {
			return nil, err
		}
	default:
		if fetched, err := o.fromCluster(g); err == nil {
			c = fetched
			c.Cluster.CertificatesDir = o.certDir
		} else {
			fmt.Fprintf(msgs, "[%s] Error reading configuration from the Cluster (%v). Falling back to default configuration\n\n", o.prefix, err)
			c.EnsureInit()
			c.Cluster.CertificatesDir = o.certDir
		}
	}
	c.EnsureInit()
	if err := c.DefaultInit(config.DetectHost()); err != nil {
		return nil, err
	}
	if err := c.ValidateKinds(config.KindCluster); err != nil {
		return nil, err
	}
	return c, nil
}

// fromCluster reads the ClusterConfiguration init stored, with a bound:
// certificates must be renewable while the control plane is down.
func (o *clusterOptions) fromCluster(g *GlobalFlags) (*config.Config, error) {
	file := o.kubeconfig
	if file == "" {
		file = fsys.NewRoot(g.Root).Path(node.AdminKubeconfig)
	}
	client, rc, err := apiclient.FromKubeconfig(file, "")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return bootstrap.FetchConfig(ctx, client, rc.Host)
}

func (o *clusterOptions) writers(g *GlobalFlags, s Streams) (*pki.Generator, *kubeconfig.Writer, error) {
	msgs := s.Out
	if o.quiet {
		msgs = s.Err
	}
	c, err := o.load(g, msgs)
	if err != nil {
		return nil, nil, err
	}
	fs := g.FS(false, s.Out)
	gen := &pki.Generator{FS: fs, Cfg: c, Out: s.Out}
	return gen, &kubeconfig.Writer{FS: fs, Cfg: c, PKI: gen, Out: s.Out}, nil
}

func newCertsCommand(g *GlobalFlags, s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "certs",
		Short: "Commands related to handling Kubernetes certificates",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newCheckExpirationCommand(g, s), newRenewCommand(g, s), newRotateCACommand(g, s), &cobra.Command{
		Use:   "certificate-key",
		Short: "Generate certificate keys",
		Long: `This command will print out a secure randomly-generated certificate key that can be used with
the "init" command. You can also use "kubeboot init --upload-certs" without specifying a
certificate key and it will generate and print one for you.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			key := make([]byte, 32)
			if _, err := rand.Read(key); err != nil {
				return err
			}
			fmt.Fprintln(s.Out, hex.EncodeToString(key))
			return nil
		},
	})
	return cmd
}

func newCheckExpirationCommand(g *GlobalFlags, s Streams) *cobra.Command {
	o := &clusterOptions{prefix: "check-expiration"}
	cmd := &cobra.Command{
		Use:   "check-expiration",
		Short: "Check certificates expiration for a Kubernetes cluster",
		Long:  "Checks expiration for the certificates in the local PKI managed by kubeboot.",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			gen, kw, err := o.writers(g, s)
			if err != nil {
				return err
			}
			cas, leaves := gen.Inspect()
			for _, k := range kubeconfig.Renewable(gen.Cfg) {
				st := pki.Status{Name: k.FileName, CAName: "ca"}
				file := path.Join(node.KubernetesDir, k.FileName)
				if cert, err := kw.ClientCert(file); err != nil {
					if fsys.Exists(gen.FS, file) {
						st.Err = err
					} else {
						st.Missing = true
					}
				} else {
					st.NotAfter = cert.NotAfter
					if ca, err := gen.CA("ca"); err == nil {
						st.External = ca.Key == nil
					}
				}
				leaves = append(leaves, st)
			}
			sort.Slice(leaves, func(i, j int) bool { return leaves[i].Name < leaves[j].Name })
			now := time.Now()
			w := tabwriter.NewWriter(s.Out, 10, 4, 3, ' ', 0)
			fmt.Fprintln(w, "CERTIFICATE\tEXPIRES\tRESIDUAL TIME\tCERTIFICATE AUTHORITY\tEXTERNALLY MANAGED")
			var unreadable []string
			row := func(st pki.Status, cells string) bool {
				switch {
				case st.Missing:
					fmt.Fprintf(w, "!MISSING! %s%s\n", st.Name, cells)
				case st.Err != nil:
					fmt.Fprintf(w, "!INVALID! %s%s\n", st.Name, cells)
					unreadable = append(unreadable, fmt.Sprintf("%s: %v", st.Name, st.Err))
				default:
					return false
				}
				return true
			}
			for _, st := range leaves {
				if row(st, "\t\t\t\t") {
					continue
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", st.Name, expires(st.NotAfter), residual(now, st.NotAfter), st.CAName, yesNo(st.External))
			}
			w.Flush()
			fmt.Fprintln(s.Out)
			w = tabwriter.NewWriter(s.Out, 10, 4, 3, ' ', 0)
			fmt.Fprintln(w, "CERTIFICATE AUTHORITY\tEXPIRES\tRESIDUAL TIME\tEXTERNALLY MANAGED")
			for _, st := range cas {
				if row(st, "\t\t\t") {
					continue
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", st.Name, expires(st.NotAfter), residual(now, st.NotAfter), yesNo(st.External))
			}
			if err := w.Flush(); err != nil {
				return err
			}
			if len(unreadable) > 0 {
				return fmt.Errorf("%d certificate(s) could not be read:\n  %s", len(unreadable), strings.Join(unreadable, "\n  "))
			}
			return nil
		},
	}
	o.addFlags(cmd)
	return cmd
}

func expires(t time.Time) string { return t.UTC().Format("Jan 02, 2006 15:04 MST") }

func residual(now, t time.Time) string {
	if !t.After(now) {
		return "<invalid>"
	}
	return duration.ShortHumanDuration(t.Sub(now))
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func newRenewCommand(g *GlobalFlags, s Streams) *cobra.Command {
	o := &clusterOptions{prefix: "renew"}
	names := append([]string{"all"}, nonCANames()...)
	for _, k := range kubeconfig.Renewable(nil) {
		names = append(names, k.FileName)
	}
	cmd := &cobra.Command{
		Use:   "renew <" + strings.Join(names, "|") + ">",
		Short: "Renew certificates for a Kubernetes cluster",
		Long: `Renew a certificate, or all of them, with a new key and a fresh validity
period, keeping the identity and SANs of the existing certificate. CAs are
not renewed. Renewal needs the signing CA's key; certificates of an external
CA are renewed with that CA.

On a node whose daemon runs, this works online: kube-apiserver and etcd
load their new certificates by themselves, and the daemon restarts, one at
a time, the components that read a renewed kubeconfig only at their start
(kube-controller-manager, kube-scheduler, ...). The daemon also renews
every certificate by itself before it expires (init's
--certificate-renew-before).`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: names,
		RunE: func(_ *cobra.Command, args []string) error {
			gen, kw, err := o.writers(g, s)
			if err != nil {
				return err
			}
			renewCert := func(name string) error {
				if err := gen.Renew(name); err != nil {
					return err
				}
				spec, _ := pki.List(gen.Cfg).Get(name)
				fmt.Fprintf(s.Out, "[renew] %s renewed\n", spec.LongName)
				return nil
			}
			var renewedFiles []string
			renewKubeconfig := func(k kubeconfig.Spec) error {
				if err := kw.Renew(k); err != nil {
					return err
				}
				renewedFiles = append(renewedFiles, gen.FS.Path(path.Join(node.KubernetesDir, k.FileName)))
				fmt.Fprintf(s.Out, "[renew] certificate embedded in the kubeconfig file %s renewed\n", k.FileName)
				return nil
			}
			arg := args[0]
			if arg == "all" {
				for _, spec := range pki.List(gen.Cfg) {
					if !spec.IsCA() {
						if err := renewCert(spec.Name); err != nil {
							return err
						}
					}
				}
				for _, k := range kubeconfig.Renewable(gen.Cfg) {
					if err := renewKubeconfig(k); err != nil {
						return err
					}
				}
			} else if k, ok := findKubeconfig(gen.Cfg, arg); ok {
				if err := renewKubeconfig(k); err != nil {
					return err
				}
			} else if err := renewCert(arg); err != nil {
				return err
			}
			return announceRenewal(gen.FS, s.Out, renewedFiles)
		},
	}
	o.addFlags(cmd)
	return cmd
}

func nonCANames() []string {
	var out []string
	for _, s := range pki.List(nil) {
		if !s.IsCA() {
			out = append(out, s.Name)
		}
	}
	return out
}

func findKubeconfig(c *config.Config, file string) (kubeconfig.Spec, bool) {
	for _, k := range kubeconfig.Renewable(c) {
		if k.FileName == file {
			return k, true
		}
	}
	return kubeconfig.Spec{}, false
}

// announceRenewal tells the node daemon to look at the renewed files now
// and says what happens next: which components it restarts (those whose
// spec names a renewed kubeconfig in RestartOn) and that the others
// reload their certificates by themselves.
func announceRenewal(fs fsys.FS, out io.Writer, renewed []string) error {
	pid := daemon.Running(fs)
	if pid == 0 {
		fmt.Fprintln(out, "\nDone renewing certificates. The kubeboot daemon does not run: the components load them when it starts them (`kubeboot daemon start`).")
		return nil
	}
	specs, err := (component.Store{FS: fs}).Load()
	if err != nil {
		return err
	}
	var restart []string
	for _, sp := range specs {
		for _, f := range sp.RestartOn {
			if slices.Contains(renewed, f) {
				restart = append(restart, sp.Name)
				break
			}
		}
	}
	if err := daemon.NewClient(fs).Reload(context.Background()); err != nil {
		return fmt.Errorf("telling the kubeboot daemon (pid %d): %w", pid, err)
	}
	fmt.Fprintln(out, "\nDone renewing certificates. kube-apiserver and etcd load them by themselves, without a restart.")
	if len(restart) > 0 {
		fmt.Fprintf(out, "The kubeboot daemon restarts %s, one at a time, each once the previous is ready: they read their kubeconfigs only at start (its log: %s).\n",
			strings.Join(restart, ", "), fs.Path(node.DaemonLogFile))
	}
	return nil
}
