package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeboot/kubeboot/api/wire"
	"github.com/kubeboot/kubeboot/cluster"
	"github.com/kubeboot/kubeboot/internal/base/version"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// newAPICommand answers one request of kubeboot's Go API module
// (github.com/kubeboot/kubeboot/api): a wire.Request on standard input, a
// wire.Response on standard output, the phases' log lines on standard
// error. Not for people: the module's package cluster calls it. It exits
// non-zero when the operation failed, after writing the response.
func newAPICommand(s Streams) *cobra.Command {
	return &cobra.Command{
		Use:    "api",
		Short:  "Answer one request of kubeboot's Go API (JSON on standard input and output)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var req wire.Request
			dec := json.NewDecoder(s.In)
			// A field this binary does not know is an option it would
			// drop: refused (the API module is newer than the binary).
			dec.DisallowUnknownFields()
			resp := answer(cmd.Context(), s, dec.Decode(&req), req)
			if err := json.NewEncoder(s.Out).Encode(resp); err != nil {
				return err
			}
			if resp.Error != nil {
				return errors.New(resp.Error.Message)
			}
			return nil
		},
	}
}

// answer runs req (unless it could not be read: readErr) and returns the
// response, the operation's failure in its Error.
func answer(ctx context.Context, s Streams, readErr error, req wire.Request) (resp wire.Response) {
	resp = wire.Response{APIVersion: wire.APIVersion, Binary: wire.Versions{
		Kubeboot: version.Kubeboot, GitCommit: version.GitCommit, Kubernetes: version.Kubernetes, Etcd: version.Etcd,
	}}
	var err error
	defer func() {
		// A panic still answers: the caller gets it as the error.
		if p := recover(); p != nil {
			resp.Init, resp.Join, resp.Token, resp.Upgrade, resp.Restore = nil, nil, nil, nil, nil
			resp.Error = &wire.Error{Message: fmt.Sprintf("kubeboot api: panic: %v", p)}
		}
	}()
	switch {
	case readErr != nil:
		err = fmt.Errorf("reading the request: %w", readErr)
	case req.Version != nil:
		// Answered whatever the request's version: the caller compares.
	case req.APIVersion != wire.APIVersion:
		err = fmt.Errorf("the request is %q; this binary (kubeboot %s) speaks %s", req.APIVersion, version.Kubeboot, wire.APIVersion)
	case operations(req) != 1:
		err = fmt.Errorf("the request names %d operations: one per request", operations(req))
	case req.Reset != nil && len(req.Reset.IgnorePreflightErrors) > 0,
		req.Upgrade != nil && len(req.Upgrade.IgnorePreflightErrors) > 0:
		err = errors.New("ignorePreflightErrors: reset and upgrade take none (only init, join and restore do)")
	case req.Init != nil:
		resp.Init, err = apiInit(ctx, s.Err, req.Init)
	case req.Join != nil:
		resp.Join, err = apiJoin(ctx, s.Err, req.Join)
	case req.Reset != nil:
		err = cluster.Reset(ctx, cluster.ResetOptions{Node: apiNode(s.Err, req.Reset.Node), Force: true})
	case req.CreateToken != nil:
		resp.Token, err = apiCreateToken(ctx, req.CreateToken)
	case req.Upgrade != nil:
		resp.Upgrade, err = apiUpgrade(ctx, s.Err, req.Upgrade)
	case req.Restore != nil:
		resp.Restore, err = apiRestore(ctx, s.Err, req.Restore)
	}
	if err != nil {
		resp.Error = wireError(err)
	}
	return resp
}

// operations counts the operations a request names.
func operations(r wire.Request) int {
	n := 0
	for _, set := range []bool{r.Init != nil, r.Join != nil, r.Reset != nil, r.CreateToken != nil, r.Upgrade != nil, r.Restore != nil} {
		if set {
			n++
		}
	}
	return n
}

func apiNode(out io.Writer, n wire.Node) cluster.Node {
	return cluster.Node{Root: n.Root, Out: out, Err: out, SkipPhases: n.SkipPhases}
}

func apiRuntime(n wire.Node) (cluster.Runtime, error) {
	exe, err := os.Executable()
	return cluster.Runtime{Binary: exe, IgnorePreflightErrors: n.IgnorePreflightErrors}, err
}

func apiInit(ctx context.Context, out io.Writer, r *wire.InitRequest) (*wire.InitResult, error) {
	c := &config.Config{}
	if len(r.Config) > 0 {
		var err error
		if c, err = config.Parse("config", r.Config); err != nil {
			return nil, err
		}
		if err := c.NeedInit(); err != nil {
			return nil, err
		}
	}
	c.EnsureInit()
	if r.NodeName != "" {
		c.Init.NodeRegistration.Name = r.NodeName
	}
	if r.AdvertiseAddress != "" {
		c.Init.LocalAPIEndpoint.AdvertiseAddress = r.AdvertiseAddress
	}
	rt, err := apiRuntime(r.Node)
	if err != nil {
		return nil, err
	}
	res, err := cluster.Init(ctx, cluster.InitOptions{
		Node: apiNode(out, r.Node), Runtime: rt, Config: c,
		ControlPlaneOnly: r.ControlPlaneOnly, SingleNode: r.SingleNode, Hardened: r.Hardened, UploadCerts: r.UploadCerts,
	})
	if err != nil || res == nil {
		return nil, err
	}
	return wireInitResult(res), nil
}

func wireInitResult(res *cluster.InitResult) *wire.InitResult {
	return &wire.InitResult{
		NodeName: res.NodeName, AdminKubeconfig: res.AdminKubeconfig, APIServer: res.APIServer,
		Join: wireJoinCommand(res.Join), ControlPlaneJoin: wireJoinCommand(res.ControlPlaneJoin),
	}
}

func apiCreateToken(ctx context.Context, r *wire.CreateTokenRequest) (*wire.JoinCommand, error) {
	j, err := cluster.CreateToken(ctx, cluster.TokenOptions{
		Kubeconfig: r.Kubeconfig, Token: r.Token, TTL: time.Duration(r.TTLSeconds) * time.Second,
		Description: r.Description, Usages: r.Usages, Groups: r.Groups, CertificateKey: r.CertificateKey,
	})
	if err != nil {
		return nil, err
	}
	return wireJoinCommand(j), nil
}

func apiUpgrade(ctx context.Context, out io.Writer, r *wire.UpgradeRequest) (*wire.UpgradeResult, error) {
	res, err := cluster.Upgrade(ctx, cluster.UpgradeOptions{
		Node: apiNode(out, r.Node), Binary: r.Binary, Apply: r.Apply, Force: r.Force, Yes: true,
		Timeout: time.Duration(r.TimeoutSeconds) * time.Second,
	})
	if err != nil || res == nil {
		return nil, err
	}
	return &wire.UpgradeResult{From: res.From, To: res.To, Binary: res.Binary, Snapshot: res.Snapshot}, nil
}

func apiRestore(ctx context.Context, out io.Writer, r *wire.RestoreRequest) (*wire.InitResult, error) {
	rt, err := apiRuntime(r.Node)
	if err != nil {
		return nil, err
	}
	res, err := cluster.Restore(ctx, cluster.RestoreOptions{
		Node: apiNode(out, r.Node), Runtime: rt, Snapshot: r.Snapshot, AdvertiseAddress: r.AdvertiseAddress, NodeName: r.NodeName,
	})
	if err != nil || res == nil {
		return nil, err
	}
	return wireInitResult(res), nil
}

func apiJoin(ctx context.Context, out io.Writer, r *wire.JoinRequest) (*wire.JoinResult, error) {
	var c *config.Config
	switch {
	case len(r.Config) > 0 && r.Command != nil:
		return nil, errors.New("join is given both a command and a JoinConfiguration: give the cluster in one place")
	case len(r.Config) > 0:
		var err error
		if c, err = config.Parse("config", r.Config); err != nil {
			return nil, err
		}
		if err := c.NeedJoin(); err != nil {
			return nil, err
		}
	case r.Command != nil:
		j := r.Command
		c = cluster.JoinCommand{Endpoint: j.Endpoint, Token: j.Token, CACertHash: j.CACertHash, ControlPlane: j.ControlPlane, CertificateKey: j.CertificateKey}.Config()
	default:
		return nil, errors.New("join needs a command (endpoint, token, CA hash) or a JoinConfiguration")
	}
	if r.NodeName != "" {
		c.Join.NodeRegistration.Name = r.NodeName
	}
	rt, err := apiRuntime(r.Node)
	if err != nil {
		return nil, err
	}
	res, err := cluster.Join(ctx, cluster.JoinOptions{Node: apiNode(out, r.Node), Runtime: rt, Config: c})
	if err != nil || res == nil {
		return nil, err
	}
	return &wire.JoinResult{NodeName: res.NodeName, ControlPlane: res.ControlPlane, Kubeconfig: res.Kubeconfig, AdminKubeconfig: res.AdminKubeconfig}, nil
}

func wireJoinCommand(j *cluster.JoinCommand) *wire.JoinCommand {
	if j == nil {
		return nil
	}
	return &wire.JoinCommand{Endpoint: j.Endpoint, Token: j.Token, CACertHash: j.CACertHash, ControlPlane: j.ControlPlane, CertificateKey: j.CertificateKey}
}

// wireError carries err, and where it is in the request's documents when
// it is a configuration error: the document, its line and kind, the
// fields kubeadm's validation refused.
func wireError(err error) *wire.Error {
	e := &wire.Error{Message: err.Error()}
	var v *config.ValidationError
	var d *config.DocError
	switch {
	case errors.As(err, &v):
		e.Document, e.Line, e.Kind = v.Doc.Index, v.Doc.Line, v.Doc.Kind
		for _, fe := range v.Errs {
			e.Fields = append(e.Fields, fe.Field)
		}
	case errors.As(err, &d):
		e.Document, e.Line, e.Kind = d.Index, d.Line, d.Kind
		var fe *field.Error
		if errors.As(d.Err, &fe) {
			e.Fields = []string{fe.Field}
		}
	}
	return e
}
