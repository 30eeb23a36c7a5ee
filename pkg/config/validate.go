package config

import (
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	kubeadmscheme "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/scheme"
	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
	kubeadmvalidation "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/validation"
	netutils "k8s.io/utils/net"

	"github.com/kubeboot/kubeboot/internal/base/version"
)

// EncryptionAlgorithms are the key types kubeboot generates, as kubeadm.
var EncryptionAlgorithms = []string{
	string(kubeadmv1.EncryptionAlgorithmRSA2048),
	string(kubeadmv1.EncryptionAlgorithmRSA3072),
	string(kubeadmv1.EncryptionAlgorithmRSA4096),
	string(kubeadmv1.EncryptionAlgorithmECDSAP256),
	string(kubeadmv1.EncryptionAlgorithmECDSAP384),
}

// ValidationError lists every rule one document breaks.
type ValidationError struct {
	Doc  DocError
	Errs field.ErrorList
}

func (e *ValidationError) Error() string {
	msgs := make([]string, len(e.Errs))
	for i, fe := range e.Errs {
		msgs[i] = fe.Error()
	}
	d := e.Doc
	d.Err = fmt.Errorf("%s", strings.Join(msgs, "\n  "))
	if len(msgs) > 1 {
		d.Err = fmt.Errorf("%d errors:\n  %s", len(msgs), strings.Join(msgs, "\n  "))
	}
	return d.Error()
}

func (c *Config) docError(kind string) DocError {
	ref := c.docs[kind]
	src := c.Source
	if src == "" {
		src = "configuration"
	}
	d := DocError{Source: src, Index: ref.index, Line: ref.line, Kind: kind}
	if ref.index == 0 && c.Source == "" {
		// Built from flags and defaults, not from a file: name the kind only.
		d.Source = "configuration"
	}
	return d
}

// Validate checks every document the configuration has and returns the
// first document's errors, all rules it breaks listed.
func (c *Config) Validate() error { return c.ValidateKinds() }

// ValidateKinds is Validate restricted to the named kinds (all when none
// are named), for commands that use only part of a file.
func (c *Config) ValidateKinds(kinds ...string) error {
	check := []struct {
		kind string
		errs func() field.ErrorList
		has  bool
	}{
		{KindInit, func() field.ErrorList { return validateInit(c.Init, c.ControlPlaneOnly) }, c.Init != nil},
		{KindCluster, func() field.ErrorList { return ValidateCluster(c.Cluster) }, c.Cluster != nil},
		{KindJoin, func() field.ErrorList { return ValidateJoin(c.Join) }, c.Join != nil},
		{KindReset, func() field.ErrorList { return ValidateReset(c.Reset) }, c.Reset != nil},
	}
	// Report in file order where the file gave the documents.
	for _, ch := range check {
		if !ch.has || (len(kinds) > 0 && !slices.Contains(kinds, ch.kind)) {
			continue
		}
		if errs := ch.errs(); len(errs) > 0 {
			return &ValidationError{Doc: c.docError(ch.kind), Errs: errs}
		}
	}
	return nil
}

// NormalizeVersion accepts "v1.37.2" and "1.37.2" and returns the v-form.
func NormalizeVersion(v string) string {
	if v != "" && !strings.HasPrefix(v, "v") {
		return "v" + v
	}
	return v
}

// ValidateCluster checks a defaulted ClusterConfiguration.
func ValidateCluster(c *kubeadmv1.ClusterConfiguration) field.ErrorList {
	var errs field.ErrorList
	if NormalizeVersion(c.KubernetesVersion) != version.Kubernetes {
		errs = append(errs, field.NotSupported(field.NewPath("kubernetesVersion"), c.KubernetesVersion, []string{version.Kubernetes}))
	}
	errs = append(errs, validateNetworking(&c.Networking, field.NewPath("networking"))...)
	if c.ControlPlaneEndpoint != "" {
		errs = append(errs, validateHostPort(c.ControlPlaneEndpoint, false, field.NewPath("controlPlaneEndpoint"))...)
	}
	for i, san := range c.APIServer.CertSANs {
		errs = append(errs, validateSAN(san, field.NewPath("apiServer", "certSANs").Index(i))...)
	}
	errs = append(errs, validateArgs(c.APIServer.ExtraArgs, field.NewPath("apiServer", "extraArgs"))...)
	errs = append(errs, validateArgs(c.ControllerManager.ExtraArgs, field.NewPath("controllerManager", "extraArgs"))...)
	errs = append(errs, validateArgs(c.Scheduler.ExtraArgs, field.NewPath("scheduler", "extraArgs"))...)
	errs = append(errs, validateEtcd(&c.Etcd, field.NewPath("etcd"))...)
	if c.ClusterName == "" {
		errs = append(errs, field.Required(field.NewPath("clusterName"), ""))
	}
	if c.CertificateValidityPeriod != nil && c.CertificateValidityPeriod.Duration <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("certificateValidityPeriod"), c.CertificateValidityPeriod.Duration.String(), "must be positive"))
	}
	if c.CACertificateValidityPeriod != nil && c.CACertificateValidityPeriod.Duration <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("caCertificateValidityPeriod"), c.CACertificateValidityPeriod.Duration.String(), "must be positive"))
	}
	return withKubeadm(errs, kubeadmClusterErrors(c))
}

func validateNetworking(n *kubeadmv1.Networking, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	svc, svcErrs := parseCIDRs(n.ServiceSubnet, p.Child("serviceSubnet"))
	errs = append(errs, svcErrs...)
	for _, s := range svc {
		errs = append(errs, validateServiceCIDRSize(s, p.Child("serviceSubnet"))...)
	}
	if n.PodSubnet != "" {
		pods, podErrs := parseCIDRs(n.PodSubnet, p.Child("podSubnet"))
		errs = append(errs, podErrs...)
		if len(pods) == 2 && len(svc) == 1 {
			// kube-apiserver would give every Service one family only,
			// and a RequireDualStack Service could not be.
			errs = append(errs, field.Invalid(p.Child("serviceSubnet"), n.ServiceSubnet,
				"a dual-stack pod network needs a dual-stack service network: give one CIDR of each family, as podSubnet (e.g. 10.96.0.0/16,fd00:10:96::/112)"))
		}
		if len(pods) == 1 && len(svc) == 1 && netutils.IsIPv6CIDR(pods[0]) != netutils.IsIPv6CIDR(svc[0]) {
			// The engines police and route one family: kube-router
			// refuses a Service network of another.
			errs = append(errs, field.Invalid(p.Child("serviceSubnet"), n.ServiceSubnet,
				fmt.Sprintf("is not of the pod network's family (%s): give a service network of the same family (e.g. fd00:10:96::/112 with an IPv6 pod network), or one of each for dual-stack", n.PodSubnet)))
		}
		if len(pods) == 1 && len(svc) == 2 {
			errs = append(errs, field.Invalid(p.Child("podSubnet"), n.PodSubnet,
				"a dual-stack service network needs a dual-stack pod network: give one CIDR of each family, as serviceSubnet (e.g. 10.244.0.0/16,fd00:10:244::/56)"))
		}
		// A pod subnet too small or too large for the node subnets the
		// controller-manager cuts from it (a /24 or /64 each unless
		// node-cidr-mask-size-ipv4/-ipv6 says otherwise) is kubeadm's
		// check (ValidatePodSubnetNodeMask).
		for _, pc := range pods {
			for _, sc := range svc {
				if pc.Contains(sc.IP) || sc.Contains(pc.IP) {
					errs = append(errs, field.Invalid(p.Child("podSubnet"), n.PodSubnet,
						fmt.Sprintf("overlaps with the service subnet %s: pods and services need disjoint ranges", sc)))
				}
			}
		}
	}
	if n.DNSDomain != "" {
		for _, msg := range validation.IsDNS1123Subdomain(n.DNSDomain) {
			errs = append(errs, field.Invalid(p.Child("dnsDomain"), n.DNSDomain, msg))
		}
	}
	return errs
}

// parseCIDRs reads one CIDR or a dual-stack pair "v4,v6".
func parseCIDRs(s string, p *field.Path) ([]*net.IPNet, field.ErrorList) {
	if s == "" {
		return nil, field.ErrorList{field.Required(p, "a CIDR such as 10.96.0.0/12")}
	}
	parts := strings.Split(s, ",")
	if len(parts) > 2 {
		return nil, field.ErrorList{field.Invalid(p, s, "at most two CIDRs (one IPv4 and one IPv6) may be given")}
	}
	var out []*net.IPNet
	var errs field.ErrorList
	for _, part := range parts {
		ip, n, err := netutils.ParseCIDRSloppy(strings.TrimSpace(part))
		if err != nil {
			errs = append(errs, field.Invalid(p, part, "must be a valid CIDR such as 10.96.0.0/12"))
			continue
		}
		if !ip.Equal(n.IP) {
			errs = append(errs, field.Invalid(p, part, fmt.Sprintf("has host bits set; did you mean %s?", n)))
			continue
		}
		out = append(out, n)
	}
	if len(out) == 2 && netutils.IsIPv6CIDR(out[0]) == netutils.IsIPv6CIDR(out[1]) {
		errs = append(errs, field.Invalid(p, s, "a dual-stack pair needs one IPv4 and one IPv6 CIDR"))
	}
	return out, errs
}

// validateServiceCIDRSize applies the kube-apiserver's limits: at most 20
// host bits (larger ranges are refused by the allocator) and at least 16
// addresses (the apiserver takes .1 and cluster DNS takes .10).
func validateServiceCIDRSize(n *net.IPNet, p *field.Path) field.ErrorList {
	ones, bits := n.Mask.Size()
	host := bits - ones
	switch {
	case host > 20:
		return field.ErrorList{field.Invalid(p, n.String(), fmt.Sprintf("is too large: at most 20 host bits (/%d) are allowed", bits-20))}
	case host < 4:
		return field.ErrorList{field.Invalid(p, n.String(), fmt.Sprintf("is too small: at least 16 addresses (/%d) are needed for the API server (.1) and cluster DNS (.10)", bits-4))}
	}
	return nil
}

// validateHostPort checks "host[:port]"; the port is required when
// requirePort is set.
func validateHostPort(s string, requirePort bool, p *field.Path) field.ErrorList {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		if requirePort {
			return field.ErrorList{field.Invalid(p, s, "must be host:port, e.g. 10.0.0.1:6443 or cp.example.com:6443")}
		}
		host, port = s, ""
		if strings.Contains(s, ":") && net.ParseIP(s) == nil {
			return field.ErrorList{field.Invalid(p, s, "must be host or host:port, e.g. 10.0.0.1:6443 or cp.example.com:6443")}
		}
	}
	var errs field.ErrorList
	if host == "" {
		errs = append(errs, field.Invalid(p, s, "the host is empty"))
	} else if netutils.ParseIPSloppy(host) == nil {
		if msgs := validation.IsDNS1123Subdomain(host); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p, s, "the host is neither an IP address nor a DNS name: "+strings.Join(msgs, "; ")))
		}
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			errs = append(errs, field.Invalid(p, s, "the port must be a number from 1 to 65535"))
		}
	}
	return errs
}

func validateSAN(san string, p *field.Path) field.ErrorList {
	if netutils.ParseIPSloppy(san) != nil {
		return nil
	}
	name := strings.TrimPrefix(san, "*.")
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return field.ErrorList{field.Invalid(p, san, "must be an IP address or a DNS name (a leading *. is allowed)")}
	}
	return nil
}

func validateArgs(args []kubeadmv1.Arg, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, a := range args {
		if a.Name == "" || strings.HasPrefix(a.Name, "-") {
			errs = append(errs, field.Invalid(p.Index(i).Child("name"), a.Name, "must be a flag name without leading dashes"))
		}
	}
	return errs
}

func validateAbsPath(s string, p *field.Path) field.ErrorList {
	if !path.IsAbs(s) {
		return field.ErrorList{field.Invalid(p, s, "must be an absolute path")}
	}
	return nil
}

func validateEtcd(e *kubeadmv1.Etcd, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if e.Local != nil && e.External != nil {
		errs = append(errs, field.Invalid(p, "local and external", "etcd must be either local or external, not both"))
		return errs
	}
	if e.Local != nil {
		lp := p.Child("local")
		for i, s := range e.Local.ServerCertSANs {
			errs = append(errs, validateSAN(s, lp.Child("serverCertSANs").Index(i))...)
		}
		for i, s := range e.Local.PeerCertSANs {
			errs = append(errs, validateSAN(s, lp.Child("peerCertSANs").Index(i))...)
		}
		errs = append(errs, validateArgs(e.Local.ExtraArgs, lp.Child("extraArgs"))...)
	}
	if e.External != nil {
		xp := p.Child("external")
		if len(e.External.Endpoints) == 0 {
			errs = append(errs, field.Required(xp.Child("endpoints"), "at least one etcd URL"))
		}
		https := false
		for i, ep := range e.External.Endpoints {
			u, err := url.Parse(ep)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				errs = append(errs, field.Invalid(xp.Child("endpoints").Index(i), ep, "must be an http:// or https:// URL"))
				continue
			}
			https = https || u.Scheme == "https"
		}
		if https {
			for name, v := range map[string]string{"caFile": e.External.CAFile, "certFile": e.External.CertFile, "keyFile": e.External.KeyFile} {
				if v == "" {
					errs = append(errs, field.Required(xp.Child(name), "needed for https endpoints"))
				}
			}
		}
	}
	return errs
}

// ValidateInit checks a defaulted InitConfiguration.
func ValidateInit(c *kubeadmv1.InitConfiguration) field.ErrorList { return validateInit(c, false) }

// validateInit is ValidateInit; controlPlaneOnly allows a loopback
// advertise address (see Config.ControlPlaneOnly).
func validateInit(c *kubeadmv1.InitConfiguration, controlPlaneOnly bool) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateAPIEndpoint(&c.LocalAPIEndpoint, field.NewPath("localAPIEndpoint"), controlPlaneOnly)...)
	errs = append(errs, validateNodeRegistration(&c.NodeRegistration, field.NewPath("nodeRegistration"))...)
	// kubeadm's rules for the tokens, on the same (v1) type; and one it
	// lacks: a negative TTL.
	errs = append(errs, kubeadmvalidation.ValidateBootstrapTokens(c.BootstrapTokens, field.NewPath("bootstrapTokens"))...)
	for i, bt := range c.BootstrapTokens {
		if bt.TTL != nil && bt.TTL.Duration < 0 {
			errs = append(errs, field.Invalid(field.NewPath("bootstrapTokens").Index(i).Child("ttl"), bt.TTL.Duration.String(), "must not be negative (0 means never expires)"))
		}
	}
	if c.CertificateKey != "" {
		errs = append(errs, validateCertificateKey(c.CertificateKey, field.NewPath("certificateKey"))...)
	}
	return withKubeadm(errs, kubeadmInitErrors(c))
}

func validateCertificateKey(k string, p *field.Path) field.ErrorList {
	b, err := hex.DecodeString(k)
	if err != nil || len(b) != 32 {
		return field.ErrorList{field.Invalid(p, "<hidden>", "must be 64 hexadecimal characters (a 32-byte AES key; see `kubeboot certs certificate-key`)")}
	}
	return nil
}

// validateAPIEndpoint checks an API endpoint; loopback allows a loopback
// address.
func validateAPIEndpoint(e *kubeadmv1.APIEndpoint, p *field.Path, loopback bool) field.ErrorList {
	var errs field.ErrorList
	ip := netutils.ParseIPSloppy(e.AdvertiseAddress)
	switch {
	case e.AdvertiseAddress == "":
		errs = append(errs, field.Required(p.Child("advertiseAddress"), "no default route to take it from; set --apiserver-advertise-address"))
	case ip == nil:
		errs = append(errs, field.Invalid(p.Child("advertiseAddress"), e.AdvertiseAddress, "must be a valid IP address"))
	case ip.IsLoopback() && !loopback:
		errs = append(errs, field.Invalid(p.Child("advertiseAddress"), e.AdvertiseAddress, "must not be a loopback address: kube-apiserver's endpoint reconciler refuses 127.0.0.0/8 and ::1 (a control plane alone, without a node, may have one)"))
	case ip.IsUnspecified():
		errs = append(errs, field.Invalid(p.Child("advertiseAddress"), e.AdvertiseAddress, "must be the address other nodes reach this one at, not an unspecified address"))
	}
	if e.BindPort < 1 || e.BindPort > 65535 {
		errs = append(errs, field.Invalid(p.Child("bindPort"), e.BindPort, "must be from 1 to 65535"))
	}
	return errs
}

func validateNodeRegistration(n *kubeadmv1.NodeRegistrationOptions, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if n.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "set --node-name"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(n.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), n.Name, msg))
		}
	}
	// kubeadm's check (defaulting has prepended unix:// to a bare path),
	// and then one kubeadm lacks: the socket is an absolute path.
	if e := kubeadmvalidation.ValidateSocketPath(n.CRISocket, p.Child("criSocket")); len(e) > 0 {
		errs = append(errs, e...)
	} else if u, _ := url.Parse(n.CRISocket); u.Host != "" || !path.IsAbs(u.Path) {
		errs = append(errs, field.Invalid(p.Child("criSocket"), n.CRISocket, "must be a unix socket by absolute path, e.g. unix:///run/containerd/containerd.sock"))
	}
	return errs
}

var caCertHash = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// ValidateJoin checks a defaulted JoinConfiguration.
func ValidateJoin(c *kubeadmv1.JoinConfiguration) field.ErrorList {
	var errs field.ErrorList
	dp := field.NewPath("discovery")
	d := c.Discovery
	switch {
	case d.BootstrapToken == nil && d.File == nil:
		errs = append(errs, field.Required(dp, "either discovery.bootstrapToken or discovery.file"))
	case d.BootstrapToken != nil && d.File != nil:
		errs = append(errs, field.Invalid(dp, "bootstrapToken and file", "only one of discovery.bootstrapToken and discovery.file may be set"))
	case d.BootstrapToken != nil:
		bp := dp.Child("bootstrapToken")
		if !bootstraputil.IsValidBootstrapToken(d.BootstrapToken.Token) {
			errs = append(errs, field.Invalid(bp.Child("token"), d.BootstrapToken.Token, "must be of the form [a-z0-9]{6}.[a-z0-9]{16}"))
		}
		if d.BootstrapToken.APIServerEndpoint == "" {
			errs = append(errs, field.Required(bp.Child("apiServerEndpoint"), "host:port of the control plane"))
		} else {
			errs = append(errs, validateHostPort(d.BootstrapToken.APIServerEndpoint, true, bp.Child("apiServerEndpoint"))...)
		}
		if len(d.BootstrapToken.CACertHashes) == 0 && !d.BootstrapToken.UnsafeSkipCAVerification {
			errs = append(errs, field.Required(bp.Child("caCertHashes"), "pin the CA with sha256:<hash> (printed by `kubeboot init`) or set unsafeSkipCAVerification"))
		}
		for i, h := range d.BootstrapToken.CACertHashes {
			if !caCertHash.MatchString(h) {
				errs = append(errs, field.Invalid(bp.Child("caCertHashes").Index(i), h, "must be sha256: followed by 64 lowercase hexadecimal characters"))
			}
		}
	case d.File != nil:
		if d.File.KubeConfigPath == "" {
			errs = append(errs, field.Required(dp.Child("file", "kubeConfigPath"), ""))
		}
	}
	if d.TLSBootstrapToken != "" && !bootstraputil.IsValidBootstrapToken(d.TLSBootstrapToken) {
		errs = append(errs, field.Invalid(dp.Child("tlsBootstrapToken"), d.TLSBootstrapToken, "must be of the form [a-z0-9]{6}.[a-z0-9]{16}"))
	}
	errs = append(errs, validateNodeRegistration(&c.NodeRegistration, field.NewPath("nodeRegistration"))...)
	if c.ControlPlane != nil {
		cp := field.NewPath("controlPlane")
		if c.ControlPlane.LocalAPIEndpoint.AdvertiseAddress != "" || c.ControlPlane.LocalAPIEndpoint.BindPort != 0 {
			errs = append(errs, validateAPIEndpoint(&c.ControlPlane.LocalAPIEndpoint, cp.Child("localAPIEndpoint"), false)...)
		}
		if c.ControlPlane.CertificateKey != "" {
			errs = append(errs, validateCertificateKey(c.ControlPlane.CertificateKey, cp.Child("certificateKey"))...)
		}
	}
	return withKubeadm(errs, kubeadmJoinErrors(c))
}

// ValidateReset checks a defaulted ResetConfiguration.
func ValidateReset(c *kubeadmv1.ResetConfiguration) field.ErrorList {
	internal := &kubeadmapi.ResetConfiguration{}
	if err := kubeadmscheme.Scheme.Convert(c, internal, nil); err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return kubeadmvalidation.ValidateResetConfiguration(internal)
}

// Every document is checked by kubeadm's own validation too
// (k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/validation, on the
// document converted to kubeadm's internal types), so kubeboot accepts
// nothing kubeadm refuses. kubeboot's own rules run first: they add what
// kubeadm does not check (loopback advertise addresses, overlapping pod
// and service subnets, a single-stack pod network, the embedded
// Kubernetes version, flag names with dashes) and say what to do where
// kubeadm only says a value is invalid. A kubeadm error on a field
// kubeboot already reported is left out.
func withKubeadm(ours, theirs field.ErrorList) field.ErrorList {
	related := func(a, b string) bool {
		return a == b || strings.HasPrefix(a, b+".") || strings.HasPrefix(a, b+"[") || strings.HasPrefix(b, a+".") || strings.HasPrefix(b, a+"[")
	}
	out := ours
	for _, e := range theirs {
		if !slices.ContainsFunc(ours, func(o *field.Error) bool { return related(o.Field, e.Field) }) {
			out = append(out, e)
		}
	}
	return out
}

func kubeadmClusterErrors(c *kubeadmv1.ClusterConfiguration) field.ErrorList {
	internal := &kubeadmapi.ClusterConfiguration{}
	if err := kubeadmscheme.Scheme.Convert(c, internal, nil); err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return kubeadmvalidation.ValidateClusterConfiguration(internal)
}

// kubeadmInitErrors are kubeadm's rules for the InitConfiguration's own
// fields (its ClusterConfiguration is another document here).
func kubeadmInitErrors(c *kubeadmv1.InitConfiguration) field.ErrorList {
	internal := &kubeadmapi.InitConfiguration{}
	if err := kubeadmscheme.Scheme.Convert(c, internal, nil); err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	var errs field.ErrorList
	errs = append(errs, kubeadmvalidation.ValidateNodeRegistrationOptions(&internal.NodeRegistration, field.NewPath("nodeRegistration"))...)
	errs = append(errs, kubeadmvalidation.ValidateAPIEndpoint(&internal.LocalAPIEndpoint, field.NewPath("localAPIEndpoint"))...)
	errs = append(errs, kubeadmvalidation.ValidateCertificateKey(internal.CertificateKey, field.NewPath("certificateKey"))...)
	return errs
}

func kubeadmJoinErrors(c *kubeadmv1.JoinConfiguration) field.ErrorList {
	internal := &kubeadmapi.JoinConfiguration{}
	if err := kubeadmscheme.Scheme.Convert(c, internal, nil); err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return kubeadmvalidation.ValidateJoinConfiguration(internal)
}
