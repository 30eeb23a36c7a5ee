package nethost

import "testing"

// The tail of `kubeboot init`'s output, as
// internal/phases/initphases' show-join-command prints it.
const (
	uploadCerts = `[upload-certs] Storing the certificates in Secret "kubeadm-certs" in the "kube-system" Namespace
[upload-certs] Using certificate key:
2f6c3b7e0d1a4c5b8e9f0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f
`
	initHead = `
Your Kubernetes control-plane has initialized successfully!

To start using your cluster, you need to run the following as a regular user:

  mkdir -p $HOME/.kube
  sudo cp -i /etc/kubernetes/admin.conf $HOME/.kube/config
  sudo chown $(id -u):$(id -g) $HOME/.kube/config

Alternatively, if you are the root user, you can run:

  export KUBECONFIG=/etc/kubernetes/admin.conf

kubectl is built in: kubeboot kubectl --kubeconfig /etc/kubernetes/admin.conf get nodes

`
	controlPlaneJoin = "You can now join any number of control-plane nodes running the following command on each as root:\n\n" +
		"kubeboot join 10.208.0.2:6443 --token abcdef.0123456789abcdef \\\n" +
		"\t--discovery-token-ca-cert-hash sha256:8d3f0c1e2b4a59687f0e1d2c3b4a59687f0e1d2c3b4a59687f0e1d2c3b4a5968 \\\n" +
		"\t--control-plane --certificate-key 2f6c3b7e0d1a4c5b8e9f0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f\n\n" +
		"Please note that the certificate-key gives access to cluster sensitive data, keep it secret!\n" +
		"As a safeguard, uploaded-certs will be deleted in two hours.\n\n"
	workerJoin = "Then you can join any number of worker nodes by running the following on each as root:\n\n" +
		"kubeboot join 10.208.0.2:6443 --token abcdef.0123456789abcdef \\\n" +
		"\t--discovery-token-ca-cert-hash sha256:8d3f0c1e2b4a59687f0e1d2c3b4a59687f0e1d2c3b4a59687f0e1d2c3b4a5968\n"
)

func TestParseJoin(t *testing.T) {
	const (
		token = "abcdef.0123456789abcdef"
		hash  = "sha256:8d3f0c1e2b4a59687f0e1d2c3b4a59687f0e1d2c3b4a59687f0e1d2c3b4a5968"
		key   = "2f6c3b7e0d1a4c5b8e9f0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f"
	)
	for _, tc := range []struct {
		name, out string
		want      JoinCommand
		ok        bool
	}{
		{"with --upload-certs", uploadCerts + initHead + controlPlaneJoin + workerJoin, JoinCommand{Token: token, Hash: hash, CertificateKey: key}, true},
		{"without --upload-certs", initHead + workerJoin, JoinCommand{Token: token, Hash: hash}, true},
		{"a failed init", "error: init: [preflight] port 6443 is in use\n", JoinCommand{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseJoin(tc.out)
			if got != tc.want || ok != tc.ok {
				t.Errorf("ParseJoin = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
