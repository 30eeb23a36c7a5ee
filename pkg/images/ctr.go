package images

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// Namespace is containerd's namespace for the images the kubelet uses.
const Namespace = "k8s.io"

// ctr runs containerd's own client against a socket. kubeboot drives
// image import and export through it rather than re-implementing
// containerd's archive handling.
func ctr(ctx context.Context, socket string, stdin io.Reader, args ...string) (string, error) {
	path, err := exec.LookPath("ctr")
	if err != nil {
		return "", fmt.Errorf("ctr (containerd's client) is not installed: apt-get install containerd")
	}
	cmd := exec.CommandContext(ctx, path, append([]string{"--address", socket, "--namespace", Namespace}, args...)...)
	var out bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("ctr %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// Import loads image archives (docker save or OCI layout tarballs) into
// the node's containerd and unpacks them for the kubelet.
func Import(ctx context.Context, socket string, archive io.Reader) error {
	_, err := ctr(ctx, socket, archive, "images", "import", "--all-platforms=false", "-")
	return err
}

// ImportBuilt builds kubeboot's own images from binPath and streams them
// into containerd, without writing the archive anywhere.
func ImportBuilt(ctx context.Context, socket, binPath string) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(WriteArchive(pw, binPath, All())) }()
	err := Import(ctx, socket, pr)
	pr.Close()
	return err
}

// Export writes the named images as one archive that `docker load` and
// `ctr images import` read back.
func Export(ctx context.Context, socket, file string, names []string) error {
	_, err := ctr(ctx, socket, nil, append([]string{"images", "export", file}, names...)...)
	return err
}
