package service

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/certs/carotation"
	"github.com/kubeboot/kubeboot/internal/certs/csrapprover"
	"github.com/kubeboot/kubeboot/internal/certs/renewal"
	"github.com/kubeboot/kubeboot/internal/etcd/etcdbackup"
	"github.com/kubeboot/kubeboot/internal/host/images"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/kube/addons"
	"github.com/kubeboot/kubeboot/internal/kube/apiclient"
	"github.com/kubeboot/kubeboot/internal/kube/manifests"
	"github.com/kubeboot/kubeboot/internal/network/apilb"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
	"github.com/kubeboot/kubeboot/internal/runtime/daemon"
)

// New makes the service of one of kubeboot's own components of the node
// under fs from its spec, logging with logf.
func New(fs fsys.FS, spec component.Spec, logf func(format string, args ...any)) (*Service, error) {
	var own component.OwnConfig
	if spec.Own != nil {
		own = spec.Own.Config
	}
	var start func(ctx context.Context) (func(context.Context, func()) error, error)
	switch c := own.(type) {
	case *component.CertRenewerConfig:
		start = func(context.Context) (func(context.Context, func()) error, error) {
			r := renewal.New(fs, c.CertDir, c.EncryptionAlgorithm, c.Validity.Duration, c.RenewBefore.Duration, logf)
			return readyAtOnce(r.Run), nil
		}
	case *component.EtcdSnapshotterConfig:
		start = etcdSnapshotter(fs, c, logf)
	case *component.CAAgentConfig:
		start = caAgent(fs, c, logf)
	case *component.CSRApproverConfig:
		start = func(context.Context) (func(context.Context, func()) error, error) {
			client, _, err := apiclient.FromKubeconfig(c.Kubeconfig, "")
			if err != nil {
				return nil, err
			}
			a := &csrapprover.Approver{Client: client, Logf: logf}
			return readyAtOnce(a.Run), nil
		}
	case *component.APIServerLBConfig:
		start = apiServerLB(fs, c, logf)
	case *component.ImageRegistryConfig:
		start = imageRegistry(fs, c, logf)
	case *component.ManifestApplierConfig:
		start = func(context.Context) (func(context.Context, func()) error, error) {
			_, rc, err := apiclient.FromKubeconfig(c.Kubeconfig, "")
			if err != nil {
				return nil, err
			}
			t, err := manifests.NewCluster(rc, c.NodeName)
			if err != nil {
				return nil, err
			}
			a := &manifests.Applier{FS: fs, Target: t, Logf: logf}
			return readyAtOnce(a.Run), nil
		}
	case *component.StorageScalerConfig:
		start = func(context.Context) (func(context.Context, func()) error, error) {
			client, _, err := apiclient.FromKubeconfig(c.Kubeconfig, "")
			if err != nil {
				return nil, err
			}
			s := &addons.StorageScaler{Client: client, Logf: logf}
			return readyAtOnce(s.Run), nil
		}
	case nil:
		return nil, spec.Own.Validate(spec.Name)
	default:
		return nil, fmt.Errorf("nothing runs the configuration of %s (%T)", spec.Name, c)
	}
	if err := spec.Own.Validate(spec.Name); err != nil {
		return nil, err
	}
	return newService(spec.Name, start), nil
}

// readyAtOnce is the loop of a service that does its work as soon as it
// runs.
func readyAtOnce(run func(ctx context.Context) error) func(context.Context, func()) error {
	return func(ctx context.Context, ready func()) error {
		ready()
		return run(ctx)
	}
}

func etcdSnapshotter(fs fsys.FS, c *component.EtcdSnapshotterConfig, logf func(string, ...any)) func(context.Context) (func(context.Context, func()) error, error) {
	return func(context.Context) (func(context.Context, func()) error, error) {
		sch := &etcdbackup.Schedule{Dir: fs.Path(c.Dir), Node: c.NodeName, Interval: c.Interval.Duration, Keep: c.Keep, Logf: logf,
			Save: func(ctx context.Context, file string) (*etcdbackup.Manifest, error) {
				ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
				defer cancel()
				cfg, err := etcdbackup.LocalCluster(ctx, fs)
				if err != nil {
					return nil, fmt.Errorf("reading the cluster's configuration: %w", err)
				}
				// The node's own certificates dir, as its specs name it.
				cfg.Cluster.CertificatesDir = c.CertDir
				return etcdbackup.Save(ctx, fs, cfg, c.NodeName, file)
			}}
		return readyAtOnce(sch.Run), nil
	}
}

func caAgent(fs fsys.FS, c *component.CAAgentConfig, logf func(string, ...any)) func(context.Context) (func(context.Context, func()) error, error) {
	return func(context.Context) (func(context.Context, func()) error, error) {
		a := &carotation.Agent{FS: fs, Node: c.NodeName, CertDir: c.CertDir, Logf: logf}
		// On a control plane: its CA files and the certificates the CA
		// signs, re-issued as the cert-renewer does.
		gen, kw := renewal.Writers(fs, c.CertDir, c.EncryptionAlgorithm, c.Validity.Duration)
		a.CP = &carotation.ControlPlane{Gen: gen, KW: kw, Logf: logf,
			SigningCert: func(ctx context.Context, certFile string) error { return SigningCert(ctx, fs, certFile) }}
		return readyAtOnce(a.Run), nil
	}
}

// SigningCert points the controller-manager's
// --cluster-signing-cert-file at certFile (a node path) and waits until
// it runs with it.
func SigningCert(ctx context.Context, fs fsys.FS, certFile string) error {
	sp, ok, err := component.Store{FS: fs}.Get(component.ControllerManager)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("no %s spec on this node: run rotate-ca on the control plane", component.ControllerManager)
	}
	const flag = "--cluster-signing-cert-file="
	i := slices.IndexFunc(sp.Args, func(a string) bool { return strings.HasPrefix(a, flag) })
	if i < 0 {
		return fmt.Errorf("the %s spec has no %s flag", sp.Name, strings.TrimSuffix(flag, "="))
	}
	if sp.Args[i] == flag+fs.Path(certFile) {
		return nil
	}
	sp.Args = slices.Clone(sp.Args)
	sp.Args[i] = flag + fs.Path(certFile)
	return daemon.NewClient(fs).ReplaceSpec(ctx, sp, 2*time.Minute)
}

func apiServerLB(fs fsys.FS, c *component.APIServerLBConfig, logf func(string, ...any)) func(context.Context) (func(context.Context, func()) error, error) {
	return func(context.Context) (func(context.Context, func()) error, error) {
		ca, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, err
		}
		listen := c.Listen
		if listen == "" {
			listen = fmt.Sprintf("127.0.0.1:%d", node.APIServerLBPort)
		}
		b, err := apilb.New(apilb.Options{Listen: listen, Seed: c.Seed, CAData: ca, CAFile: c.CAFile, FS: fs, StateFile: node.APIServerLBState, Logf: logf})
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, ready func()) error {
			defer b.Close()
			logf("listening on %s, seeded with %s", b.Addr(), c.Seed)
			ready()
			if c.Kubeconfig != "" {
				go follow(ctx, b, c.Kubeconfig, logf)
			}
			return b.Run(ctx)
		}, nil
	}
}

// imageRegistry serves kubeboot's images from the binary where c says
// to listen, and imports into the runtime, the node's first, those it
// lacks: a node's join waits for none of them but pause, and a pod that
// needs one before its import is done pulls it from here.
func imageRegistry(fs fsys.FS, c *component.ImageRegistryConfig, logf func(string, ...any)) func(context.Context) (func(context.Context, func()) error, error) {
	return func(context.Context) (func(context.Context, func()) error, error) {
		open := node.ImageOpener(fs)
		var ln net.Listener
		if c.Listen != "" {
			l, err := net.Listen("tcp", c.Listen)
			if err != nil {
				return nil, err
			}
			ln = l
		}
		return func(ctx context.Context, ready func()) error {
			served := make(chan error, 1)
			if ln != nil {
				h := images.NewServer(open, images.All())
				h.Logf = logf
				srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
				go func() { served <- srv.Serve(ln) }()
				defer srv.Close()
				logf("serving %s on http://%s", strings.Join(images.Names(images.All()), ", "), ln.Addr())
			}
			ready()
			ctx, cancel := context.WithCancel(ctx)
			warmed := make(chan struct{})
			defer func() { cancel(); <-warmed }()
			go func() {
				defer close(warmed)
				warmImages(ctx, strings.TrimPrefix(c.CRISocket, "unix://"), open, logf)
			}()
			select {
			case <-ctx.Done():
				return nil
			case err := <-served:
				return err
			}
		}, nil
	}
}

// warmImages imports the images the runtime lacks, retrying until the
// runtime answers and takes them: pause first (every pod's sandbox, what
// a join waits for), then the node's, then the add-ons'. A pod that needs
// one sooner pulls it from the registry.
func warmImages(ctx context.Context, socket string, open images.Opener, logf func(string, ...any)) {
	node := images.Node()
	imported := false
	for _, group := range [][]images.Image{{images.Sandbox()}, node[1:], images.AddOns()} {
		_ = wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
			missing, err := images.Missing(ctx, socket, group)
			if err == nil && len(missing) > 0 {
				start := time.Now()
				var streamed int64
				streamed, err = images.ImportBuilt(ctx, socket, open, missing)
				if err == nil {
					imported = true
					logf("imported %s into the runtime in %s (%.0f MiB of layers, from the binary)", strings.Join(images.Names(missing), ", "), time.Since(start).Round(time.Millisecond), float64(streamed)/(1<<20))
				}
			}
			if err != nil && ctx.Err() == nil {
				logf("importing %s (retrying): %v", strings.Join(images.Names(group), ", "), err)
			}
			return err == nil, nil
		})
	}
	if ctx.Err() != nil {
		return
	}
	logf("the runtime has every image of this binary: %s", strings.Join(images.Names(images.All()), ", "))
	if imported {
		// The import is the daemon's one burst (~200 MiB streamed through
		// the decompressor and gRPC's buffers): hand what it left back to
		// the kernel now rather than over the scavenger's next minutes.
		debug.FreeOSMemory()
	}
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
					_ = wait.PollUntilContextCancel(fctx, 2*time.Second, false, func(context.Context) (bool, error) {
						now, err := os.Stat(kubeconfig)
						changed := err == nil && (!now.ModTime().Equal(st.ModTime()) || now.Size() != st.Size())
						if changed {
							logf("%s changed: following with its new credentials", kubeconfig)
						}
						return changed, nil
					})
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
