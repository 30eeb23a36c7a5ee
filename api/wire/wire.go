// Package wire is the protocol between kubeboot's Go API (package
// github.com/kubeboot/kubeboot/api/cluster) and the kubeboot binary: one
// JSON Request on the standard input of `kubeboot api`, one JSON Response
// on its standard output, the phases' log lines on its standard error.
//
// It holds types only, with no dependency outside the standard library,
// so that the API module imports nothing but what it publishes; the
// binary, which carries Kubernetes' and kubeadm's code, imports it too:
// both sides speak the same types by construction.
package wire

// APIVersion is the protocol's version. A binary answers a request of
// another version with an error naming both; the API refuses a binary
// whose version differs from its own before asking anything else.
const APIVersion = "api.kubeboot.io/v1alpha1"

// Request is one operation. Exactly one of its operation fields is set.
type Request struct {
	APIVersion string `json:"apiVersion"`

	Version     *VersionRequest     `json:"version,omitempty"`
	Init        *InitRequest        `json:"init,omitempty"`
	Join        *JoinRequest        `json:"join,omitempty"`
	Reset       *ResetRequest       `json:"reset,omitempty"`
	CreateToken *CreateTokenRequest `json:"createToken,omitempty"`
	Upgrade     *UpgradeRequest     `json:"upgrade,omitempty"`
	Restore     *RestoreRequest     `json:"restore,omitempty"`
}

// Response answers a Request: its operation's result, or Error.
type Response struct {
	APIVersion string `json:"apiVersion"`
	// Binary names the answering binary's versions, on every response.
	Binary Versions `json:"binary"`

	Init    *InitResult    `json:"init,omitempty"`
	Join    *JoinResult    `json:"join,omitempty"`
	Token   *JoinCommand   `json:"token,omitempty"`
	Upgrade *UpgradeResult `json:"upgrade,omitempty"`
	// Restore's result is the restored control plane's, as Init's.
	Restore *InitResult `json:"restore,omitempty"`
	Error   *Error      `json:"error,omitempty"`
}

// VersionRequest asks for the binary's versions only.
type VersionRequest struct{}

// Versions are what a binary is and carries.
type Versions struct {
	// Kubeboot is kubeboot's own version ("dev" for an unreleased build),
	// GitCommit the commit it was built from when known.
	Kubeboot  string `json:"kubeboot"`
	GitCommit string `json:"gitCommit,omitempty"`
	// Kubernetes and Etcd are the versions of the components it embeds.
	Kubernetes string `json:"kubernetes"`
	Etcd       string `json:"etcd"`
}

// Node is where a node lives, shared by every operation.
type Node struct {
	// Root is the prefix every path of the node sits under; "" is the
	// host itself.
	Root string `json:"root,omitempty"`
	// SkipPhases lists phases to leave out ("addon/coredns").
	SkipPhases []string `json:"skipPhases,omitempty"`
	// IgnorePreflightErrors are preflight checks whose errors are shown
	// as warnings ("all" for every one).
	IgnorePreflightErrors []string `json:"ignorePreflightErrors,omitempty"`
}

// InitRequest makes the node the first control plane of a new cluster.
type InitRequest struct {
	Node
	// Config holds kubeadm v1beta4 documents (InitConfiguration,
	// ClusterConfiguration, KubeletConfiguration,
	// KubeProxyConfiguration) as YAML or JSON; empty means every default.
	// The binary validates them with kubeadm's own code.
	Config []byte `json:"config,omitempty"`
	// NodeName and AdvertiseAddress override the documents'.
	NodeName         string `json:"nodeName,omitempty"`
	AdvertiseAddress string `json:"advertiseAddress,omitempty"`
	// ControlPlaneOnly runs etcd, the API server, the controller-manager
	// and the scheduler only: no node side, no root privileges needed.
	ControlPlaneOnly bool `json:"controlPlaneOnly,omitempty"`
	SingleNode       bool `json:"singleNode,omitempty"`
	Hardened         bool `json:"hardened,omitempty"`
	UploadCerts      bool `json:"uploadCerts,omitempty"`
}

// InitResult is what a caller needs once the control plane runs.
type InitResult struct {
	NodeName        string `json:"nodeName"`
	AdminKubeconfig string `json:"adminKubeconfig"`
	APIServer       string `json:"apiServer"`
	// Join is what a worker needs; ControlPlaneJoin, with UploadCerts,
	// what another control plane needs.
	Join             *JoinCommand `json:"join,omitempty"`
	ControlPlaneJoin *JoinCommand `json:"controlPlaneJoin,omitempty"`
}

// JoinCommand is what a node needs to join a cluster.
type JoinCommand struct {
	Endpoint       string `json:"endpoint"`
	Token          string `json:"token"`
	CACertHash     string `json:"caCertHash"`
	ControlPlane   bool   `json:"controlPlane,omitempty"`
	CertificateKey string `json:"certificateKey,omitempty"`
}

// JoinRequest makes the node a node of an existing cluster.
type JoinRequest struct {
	Node
	// Command is the cluster to join; Config, when set, a JoinConfiguration
	// document used instead of it.
	Command  *JoinCommand `json:"command,omitempty"`
	Config   []byte       `json:"config,omitempty"`
	NodeName string       `json:"nodeName,omitempty"`
}

// JoinResult is what a caller needs once the node has joined.
type JoinResult struct {
	NodeName        string `json:"nodeName"`
	ControlPlane    bool   `json:"controlPlane,omitempty"`
	Kubeconfig      string `json:"kubeconfig"`
	AdminKubeconfig string `json:"adminKubeconfig,omitempty"`
}

// ResetRequest stops the node and removes everything kubeboot made on it,
// without asking.
type ResetRequest struct {
	Node
}

// CreateTokenRequest creates a bootstrap token in a cluster and answers
// the join command that uses it.
type CreateTokenRequest struct {
	// Kubeconfig is an administrator's kubeconfig for the cluster.
	Kubeconfig string `json:"kubeconfig"`
	// Token is the token to create; "" generates one.
	Token string `json:"token,omitempty"`
	// TTLSeconds is how long it is valid; 0 means forever.
	TTLSeconds     int64    `json:"ttlSeconds,omitempty"`
	Description    string   `json:"description,omitempty"`
	Usages         []string `json:"usages,omitempty"`
	Groups         []string `json:"groups,omitempty"`
	CertificateKey string   `json:"certificateKey,omitempty"`
}

// UpgradeRequest moves the node to another kubeboot binary's components,
// without asking.
type UpgradeRequest struct {
	Node
	// Binary is the kubeboot binary to upgrade to.
	Binary string `json:"binary"`
	// Apply is `upgrade apply` (the first control plane); otherwise
	// `upgrade node`. Force skips the skew errors kubeadm lets skip.
	Apply bool `json:"apply,omitempty"`
	Force bool `json:"force,omitempty"`
	// TimeoutSeconds is how long each component gets to be ready again;
	// 0 is 5 minutes.
	TimeoutSeconds int64 `json:"timeoutSeconds,omitempty"`
}

// UpgradeResult is what an upgrade changed on the node.
type UpgradeResult struct {
	From     string `json:"from"`
	To       string `json:"to"`
	Binary   string `json:"binary"`
	Snapshot string `json:"snapshot,omitempty"`
}

// RestoreRequest brings a cluster back from an etcd snapshot on a node
// where kubeboot has nothing yet.
type RestoreRequest struct {
	Node
	Snapshot         string `json:"snapshot"`
	AdvertiseAddress string `json:"advertiseAddress"`
	NodeName         string `json:"nodeName"`
}

// Error is a failed operation. Document, Line and Kind locate an error in
// the request's configuration documents (0 and "" when it is not one);
// Fields names the fields kubeadm's validation refused.
type Error struct {
	Message  string   `json:"message"`
	Document int      `json:"document,omitempty"`
	Line     int      `json:"line,omitempty"`
	Kind     string   `json:"kind,omitempty"`
	Fields   []string `json:"fields,omitempty"`
}
