// Package images names the images kubeboot builds from its own binary.
// Nothing is pulled from outside the node: manifests use these exact
// names with pull policy IfNotPresent; the node daemon imports the images
// and serves them on loopback (Server) to any pull that comes first.
package images

import "github.com/kubeboot/kubeboot/internal/base/version"

// Registry is a name no registry answers to: an image under it can only
// have come from kubeboot itself.
const Registry = "kubeboot.local"

// Name returns the reference of one of kubeboot's images.
func Name(image string) string { return Registry + "/" + image + ":" + version.Kubernetes }

// The images every node carries.
var (
	Pause      = Name("pause")
	CoreDNS    = Name("coredns")
	TestServer = Name("test-server")
	// The storage add-on's: rancher's local-path-provisioner, and the
	// helper its helper pods run to make and remove a volume's directory.
	LocalPathProvisioner = Name("local-path-provisioner")
	LocalPathHelper      = Name("local-path-helper")
	// The metrics add-on's: sigs.k8s.io/metrics-server.
	MetricsServer = Name("metrics-server")
)
