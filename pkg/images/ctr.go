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
// containerd's archive handling. started, when set, is told ctr's pid
// once it runs.
func ctr(ctx context.Context, socket string, stdin io.Reader, started func(pid int), args ...string) (string, error) {
	path, err := exec.LookPath("ctr")
	if err != nil {
		return "", fmt.Errorf("ctr (containerd's client) is not installed: apt-get install containerd")
	}
	cmd := exec.CommandContext(ctx, path, append([]string{"--address", socket, "--namespace", Namespace}, args...)...)
	var out bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &out, &out
	err = cmd.Start()
	if err == nil {
		if started != nil {
			started(cmd.Process.Pid)
		}
		err = cmd.Wait()
	}
	if err != nil {
		return out.String(), fmt.Errorf("ctr %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// Import loads image archives (docker save or OCI layout tarballs) into
// the node's containerd and unpacks them for the kubelet.
func Import(ctx context.Context, socket string, archive io.Reader) error {
	return importArchive(ctx, socket, archive, nil)
}

func importArchive(ctx context.Context, socket string, archive io.Reader, started func(pid int)) error {
	_, err := ctr(ctx, socket, archive, started, "images", "import", "--all-platforms=false", "-")
	return err
}

// ImportBuilt builds kubeboot's own images from binPath and streams them
// into containerd, without writing the archive anywhere. started, when
// set, is told the pid of the importing client.
func ImportBuilt(ctx context.Context, socket, binPath string, started func(pid int)) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(WriteArchive(pw, binPath, All())) }()
	err := importArchive(ctx, socket, pr, started)
	pr.Close()
	return err
}

// Export writes the named images as one archive that `docker load` and
// `ctr images import` read back.
func Export(ctx context.Context, socket, file string, names []string) error {
	_, err := ctr(ctx, socket, nil, nil, append([]string{"images", "export", file}, names...)...)
	return err
}
