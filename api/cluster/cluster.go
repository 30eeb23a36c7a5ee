// Package cluster brings up Kubernetes clusters with kubeboot from any Go
// module: `go get github.com/kubeboot/kubeboot/api` and nothing else, no
// replace lines. Init makes a host (or a directory of it) the first
// control plane of a cluster, Join adds a node, CreateToken admits
// another, Upgrade moves a node to another kubeboot binary, Restore brings
// a cluster back from an etcd snapshot, Reset removes everything kubeboot
// made.
//
// The work is done by the kubeboot binary, which carries every component
// (Binary: by default the `kubeboot` on PATH): this package sends it one
// typed request (package wire) per call and reads its typed answer, as
// kind's pkg/cluster drives its node containers. That keeps Kubernetes'
// and kubeadm's code, and the module graph they need, inside the binary:
// this module depends on the standard library alone.
//
// A control plane for tests, as envtest gives one, is Init with
// ControlPlaneOnly: etcd, the API server, the controller-manager and the
// scheduler under a directory of the caller's, without root privileges
// and with nothing to download.
package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/kubeboot/kubeboot/api/wire"
)

// Node says which binary runs the node, where the node lives and where its
// log lines go: the options every call shares.
type Node struct {
	// Binary is the kubeboot binary; "" is the `kubeboot` on PATH. The
	// node daemon Init and Join start runs every component from it.
	Binary string
	// Root is the prefix every path of the node sits under; "" is the
	// host itself. Several nodes can share a host under distinct roots.
	Root string
	// Out receives the phases' log lines (kubeadm's); nil discards them.
	Out io.Writer
	// SkipPhases lists phases to leave out, with their sub-phases
	// ("addon/coredns").
	SkipPhases []string
	// IgnorePreflightErrors are preflight checks whose errors are shown
	// as warnings ("all" for every one).
	IgnorePreflightErrors []string
}

func (n Node) wire() wire.Node {
	return wire.Node{Root: n.Root, SkipPhases: n.SkipPhases, IgnorePreflightErrors: n.IgnorePreflightErrors}
}

// InitOptions are what `kubeboot init` takes.
type InitOptions struct {
	Node
	// Config holds kubeadm v1beta4 documents (InitConfiguration,
	// ClusterConfiguration, KubeletConfiguration, KubeProxyConfiguration)
	// as a `--config` file holds them; nil means every default. The binary
	// applies kubeadm's defaults and validates them with kubeadm's own
	// code before anything is written; a refusal is a *ConfigError.
	Config []byte
	// NodeName and AdvertiseAddress, when set, override the documents'.
	NodeName, AdvertiseAddress string
	// ControlPlaneOnly brings up etcd, the API server, the
	// controller-manager and the scheduler without the node side: no
	// kubelet, no containerd, no root privileges needed.
	ControlPlaneOnly bool
	// SingleNode leaves the control-plane taint off.
	SingleNode bool
	// Hardened turns on what the CIS benchmark asks (init --hardened).
	Hardened bool
	// UploadCerts uploads the control-plane certificates so that more
	// control planes can join (InitResult.ControlPlaneJoin).
	UploadCerts bool
}

// InitResult is what a caller needs once the control plane runs.
type InitResult struct {
	// NodeName is the control-plane node's name.
	NodeName string
	// AdminKubeconfig is the path of the cluster administrator's
	// kubeconfig (admin.conf under Root), for clientcmd.
	AdminKubeconfig string
	// APIServer is the URL every kubeconfig names.
	APIServer string
	// Join is what a worker needs to join; ControlPlaneJoin, with
	// UploadCerts, what another control plane needs.
	Join, ControlPlaneJoin *JoinCommand
}

// JoinCommand is what a node needs to join a cluster.
type JoinCommand struct {
	// Endpoint is the API server endpoint, host:port.
	Endpoint string
	// Token is the bootstrap token; CACertHash pins the cluster CA's
	// public key, "sha256:<hex>".
	Token, CACertHash string
	// ControlPlane joins a control plane; CertificateKey decrypts the
	// certificates init uploaded.
	ControlPlane   bool
	CertificateKey string
}

// JoinOptions are what `kubeboot join` takes.
type JoinOptions struct {
	Node
	// Command is the cluster to join, as InitResult gives it; Config, when
	// set, is a JoinConfiguration document used instead.
	Command  *JoinCommand
	Config   []byte
	NodeName string
}

// JoinResult is what a caller needs once the node has joined.
type JoinResult struct {
	NodeName     string
	ControlPlane bool
	// Kubeconfig is the kubelet's kubeconfig; AdminKubeconfig, on a
	// control plane, admin.conf.
	Kubeconfig, AdminKubeconfig string
}

// ResetOptions are what `kubeboot reset --force` takes.
type ResetOptions struct {
	Node
}

// Versions are what a kubeboot binary is and carries.
type Versions = wire.Versions

// VersionError is a binary this package does not speak with.
type VersionError struct {
	Binary string
	// Speaks is the binary's protocol version ("" for a binary without
	// the API); Want this package's.
	Speaks, Want string
	// Versions are the binary's; Module this package's module version.
	Versions Versions
	Module   string
}

func (e *VersionError) Error() string {
	if e.Speaks == "" {
		return fmt.Sprintf("kubeboot binary %s has no Go API (`kubeboot api`): it is older than this package (module github.com/kubeboot/kubeboot/api %s, protocol %s); use a kubeboot binary of the same release", e.Binary, e.Module, e.Want)
	}
	return fmt.Sprintf("kubeboot binary %s (kubeboot %s, Kubernetes %s) speaks %s; this package (module github.com/kubeboot/kubeboot/api %s) speaks %s: use the binary and the module of one release", e.Binary, e.Versions.Kubeboot, e.Versions.Kubernetes, e.Speaks, e.Module, e.Want)
}

// ConfigError is configuration the binary refused: the document, its
// first line and kind, and the fields kubeadm's validation named.
type ConfigError struct {
	Message  string
	Document int
	Line     int
	Kind     string
	Fields   []string
}

func (e *ConfigError) Error() string { return e.Message }

// Version returns the binary's versions, after checking that it speaks
// this package's protocol.
func Version(ctx context.Context, n Node) (Versions, error) {
	r, err := call(ctx, n, wire.Request{Version: &wire.VersionRequest{}})
	if err != nil {
		return Versions{}, err
	}
	return r.Binary, nil
}

// Init makes the node the first control plane of a new cluster and, unless
// ControlPlaneOnly, a node of it, as `kubeboot init` does. The node daemon
// it starts keeps running after Init returns; Reset stops it. When ctx is
// cancelled, the binary is sent SIGTERM, stops what it started, and Init
// returns ctx's error joined with the binary's.
func Init(ctx context.Context, o InitOptions) (*InitResult, error) {
	r, err := call(ctx, o.Node, wire.Request{Init: &wire.InitRequest{
		Node: o.wire(), Config: o.Config, NodeName: o.NodeName, AdvertiseAddress: o.AdvertiseAddress,
		ControlPlaneOnly: o.ControlPlaneOnly, SingleNode: o.SingleNode, Hardened: o.Hardened, UploadCerts: o.UploadCerts,
	}})
	if err != nil {
		return nil, err
	}
	if r.Init == nil {
		return nil, fmt.Errorf("kubeboot binary %s answered init with no result", binary(o.Node))
	}
	return initResult(r.Init), nil
}

// Join makes the node a node of an existing cluster, as `kubeboot join`
// does: a worker, or a control plane with Command.ControlPlane.
func Join(ctx context.Context, o JoinOptions) (*JoinResult, error) {
	req := &wire.JoinRequest{Node: o.wire(), Config: o.Config, NodeName: o.NodeName}
	if c := o.Command; c != nil {
		req.Command = &wire.JoinCommand{Endpoint: c.Endpoint, Token: c.Token, CACertHash: c.CACertHash, ControlPlane: c.ControlPlane, CertificateKey: c.CertificateKey}
	}
	r, err := call(ctx, o.Node, wire.Request{Join: req})
	if err != nil {
		return nil, err
	}
	if r.Join == nil {
		return nil, fmt.Errorf("kubeboot binary %s answered join with no result", binary(o.Node))
	}
	return &JoinResult{NodeName: r.Join.NodeName, ControlPlane: r.Join.ControlPlane, Kubeconfig: r.Join.Kubeconfig, AdminKubeconfig: r.Join.AdminKubeconfig}, nil
}

// Reset stops the node daemon and every component it runs, takes the node
// out of its cluster and removes everything kubeboot made on it, as
// `kubeboot reset --force` does. Running it again is a no-op.
func Reset(ctx context.Context, o ResetOptions) error {
	_, err := call(ctx, o.Node, wire.Request{Reset: &wire.ResetRequest{Node: o.wire()}})
	return err
}

// TokenOptions are what `kubeboot token create` takes.
type TokenOptions struct {
	// Node names the binary (Root and the rest are not used).
	Node
	// Kubeconfig is an administrator's kubeconfig for the cluster
	// (InitResult.AdminKubeconfig): the join command names its server and
	// pins its CA.
	Kubeconfig string
	// Token is the token to create; "" generates one.
	Token string
	// TTL is how long the token is valid, rounded up to whole seconds;
	// 0 means forever, negative is refused.
	TTL time.Duration
	// Description says what the token is for.
	Description string
	// Usages and Groups default to kubeadm's.
	Usages, Groups []string
	// CertificateKey, when set, makes the command a control plane's.
	CertificateKey string
}

// CreateToken creates a bootstrap token in the cluster, as `kubeboot token
// create` does, and returns the join command that uses it.
func CreateToken(ctx context.Context, o TokenOptions) (*JoinCommand, error) {
	ttl, err := seconds("TTL", o.TTL)
	if err != nil {
		return nil, err
	}
	r, err := call(ctx, o.Node, wire.Request{CreateToken: &wire.CreateTokenRequest{
		Kubeconfig: o.Kubeconfig, Token: o.Token, TTLSeconds: ttl, Description: o.Description,
		Usages: o.Usages, Groups: o.Groups, CertificateKey: o.CertificateKey,
	}})
	if err != nil {
		return nil, err
	}
	if r.Token == nil {
		return nil, fmt.Errorf("kubeboot binary %s answered token create with no join command", binary(o.Node))
	}
	return fromWire(r.Token), nil
}

// UpgradeOptions are what `kubeboot upgrade apply|node --yes` take.
type UpgradeOptions struct {
	Node
	// To is the kubeboot binary to upgrade to (required): its components
	// replace this node's. Node.Binary is the one that runs the upgrade.
	To string
	// Apply is `upgrade apply`, for the cluster's first control plane;
	// otherwise `upgrade node`. Force goes on despite the skew errors
	// kubeadm lets skip.
	Apply, Force bool
	// Timeout is how long each component gets to be ready again, rounded
	// up to whole seconds; 0 is 5 minutes, negative is refused.
	Timeout time.Duration
}

// UpgradeResult is what an upgrade changed on the node.
type UpgradeResult struct {
	// From and To are the Kubernetes versions, "v1.37.2".
	From, To string
	// Binary is where the new binary was installed under the root.
	Binary string
	// Snapshot is the etcd snapshot Apply saved first, if any.
	Snapshot string
}

// Upgrade moves the node to another kubeboot binary's components, as
// `kubeboot upgrade apply` (Apply) or `upgrade node` does, without asking.
func Upgrade(ctx context.Context, o UpgradeOptions) (*UpgradeResult, error) {
	timeout, err := seconds("Timeout", o.Timeout)
	if err != nil {
		return nil, err
	}
	r, err := call(ctx, o.Node, wire.Request{Upgrade: &wire.UpgradeRequest{
		Node: o.wire(), Binary: o.To, Apply: o.Apply, Force: o.Force, TimeoutSeconds: timeout,
	}})
	if err != nil {
		return nil, err
	}
	if r.Upgrade == nil {
		return nil, fmt.Errorf("kubeboot binary %s answered upgrade with no result", binary(o.Node))
	}
	return &UpgradeResult{From: r.Upgrade.From, To: r.Upgrade.To, Binary: r.Upgrade.Binary, Snapshot: r.Upgrade.Snapshot}, nil
}

// RestoreOptions are what `kubeboot etcd snapshot restore` takes.
type RestoreOptions struct {
	Node
	// Snapshot is the file `kubeboot etcd snapshot save` wrote.
	Snapshot string
	// AdvertiseAddress and NodeName are this node's (both required).
	AdvertiseAddress, NodeName string
}

// Restore brings a cluster back from an etcd snapshot on a node where
// kubeboot has nothing yet, this node its one control plane.
func Restore(ctx context.Context, o RestoreOptions) (*InitResult, error) {
	r, err := call(ctx, o.Node, wire.Request{Restore: &wire.RestoreRequest{
		Node: o.wire(), Snapshot: o.Snapshot, AdvertiseAddress: o.AdvertiseAddress, NodeName: o.NodeName,
	}})
	if err != nil {
		return nil, err
	}
	if r.Restore == nil {
		return nil, fmt.Errorf("kubeboot binary %s answered restore with no result", binary(o.Node))
	}
	return initResult(r.Restore), nil
}

// seconds is d in whole seconds, a part of one counting as one (0 keeps
// its meaning of "the default"); negative is refused.
func seconds(name string, d time.Duration) (int64, error) {
	if d < 0 {
		return 0, fmt.Errorf("%s %s: must not be negative", name, d)
	}
	return int64((d + time.Second - 1) / time.Second), nil
}

func initResult(r *wire.InitResult) *InitResult {
	return &InitResult{
		NodeName: r.NodeName, AdminKubeconfig: r.AdminKubeconfig, APIServer: r.APIServer,
		Join: fromWire(r.Join), ControlPlaneJoin: fromWire(r.ControlPlaneJoin),
	}
}

func fromWire(c *wire.JoinCommand) *JoinCommand {
	if c == nil {
		return nil
	}
	return &JoinCommand{Endpoint: c.Endpoint, Token: c.Token, CACertHash: c.CACertHash, ControlPlane: c.ControlPlane, CertificateKey: c.CertificateKey}
}

func binary(n Node) string {
	if n.Binary == "" {
		return "kubeboot"
	}
	return n.Binary
}

// moduleVersion is this module's version in the program's build, as
// `go version -m` shows it.
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/kubeboot/kubeboot/api" {
				if d.Replace != nil {
					return d.Version + " (replaced by " + d.Replace.Path + ")"
				}
				return d.Version
			}
		}
	}
	return "(unknown)"
}

// call sends req to the binary and reads the answer. Every answer names
// the binary's protocol version, and a binary refuses a request of another
// version before it runs anything: one that is not this package's is a
// VersionError, whatever the operation.
func call(ctx context.Context, n Node, req wire.Request) (*wire.Response, error) {
	req.APIVersion = wire.APIVersion
	in, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	bin := binary(n)
	cmd := exec.CommandContext(ctx, bin, "api")
	// The binary stops what it started on SIGTERM, as on Ctrl-C.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 2 * time.Minute
	var stdout, stderr bytes.Buffer
	cmd.Stdin = bytes.NewReader(in)
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if n.Out != nil {
		cmd.Stderr = io.MultiWriter(&stderr, n.Out)
	}
	runErr := cmd.Run()
	var resp wire.Response
	if err := json.Unmarshal(stdout.Bytes(), &resp); err != nil || resp.APIVersion == "" {
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("kubeboot binary %s stopped: %w", bin, ctx.Err())
		case runErr != nil && strings.Contains(stderr.String(), `unknown command "api"`):
			return nil, &VersionError{Binary: bin, Want: wire.APIVersion, Module: moduleVersion()}
		case runErr != nil:
			return nil, fmt.Errorf("kubeboot binary %s: %v: %s", bin, runErr, lastLines(stderr.String(), 10))
		default:
			return nil, fmt.Errorf("kubeboot binary %s answered no response (standard output: %q)", bin, lastLines(stdout.String(), 3))
		}
	}
	if resp.APIVersion != wire.APIVersion {
		return nil, &VersionError{Binary: bin, Speaks: resp.APIVersion, Want: wire.APIVersion, Versions: resp.Binary, Module: moduleVersion()}
	}
	if e := resp.Error; e != nil {
		var err error = errors.New(e.Message)
		if e.Document > 0 || e.Kind != "" || len(e.Fields) > 0 {
			err = &ConfigError{Message: e.Message, Document: e.Document, Line: e.Line, Kind: e.Kind, Fields: e.Fields}
		}
		if ctx.Err() != nil {
			// The binary's own account of what it stopped comes with it.
			return nil, errors.Join(ctx.Err(), err)
		}
		return nil, err
	}
	// An operation that finished as ctx ended still ran: its result counts.
	return &resp, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
