package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeboot/kubeboot/internal/host/images"
	"github.com/kubeboot/kubeboot/test/nethost"
)

// imagesNamespace holds the pods of testImagesAtJoin.
const imagesNamespace = "images-e2e"

// podsOfEveryImage creates, on node, a pod of every image kubeboot
// carries, right after the node's join: its join waited for pause only,
// so the others may still be on their way in (the node daemon imports
// them). Each container runs its one file, and most exit at once.
func podsOfEveryImage(t *testing.T, cp *nethost.Host, node string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", imagesNamespace)
	for _, img := range images.All() {
		args := "[\"--help\"]"
		if img.File == images.PauseFile {
			args = "[]"
		}
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: %s
spec:
  nodeName: %s
  restartPolicy: Never
  terminationGracePeriodSeconds: 0
  containers:
  - name: c
    image: %s
    imagePullPolicy: IfNotPresent
    args: %s
`, img.File, imagesNamespace, node, img.Name, args)
	}
	f := filepath.Join(cp.Root, "images-e2e.yaml")
	os.WriteFile(f, []byte(b.String()), 0o644)
	defer os.Remove(f)
	kubectlOn(t, cp, cp, "apply", "-f", f)
}

// testImagesAtJoin checks the pods podsOfEveryImage made: every container
// started from its image, and no pull of the node failed, whether the
// image was imported first or pulled from the node daemon's
// image-registry. Then an image deleted by hand comes back from the
// binary, with the same digest.
func testImagesAtJoin(t *testing.T, cp, h *nethost.Host, node string) {
	var pods corev1.PodList
	took := eventually(t, 90*time.Second, 300*time.Millisecond, "a container of every image started on "+node, func() error {
		if err := json.Unmarshal([]byte(kubectlOn(t, cp, cp, "get", "pods", "-n", imagesNamespace, "-o", "json")), &pods); err != nil {
			return err
		}
		var waiting []string
		for _, p := range pods.Items {
			if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].ImageID == "" ||
				(p.Status.ContainerStatuses[0].State.Running == nil && p.Status.ContainerStatuses[0].State.Terminated == nil) {
				waiting = append(waiting, p.Name)
			}
		}
		if len(pods.Items) != len(images.All()) || len(waiting) > 0 {
			return fmt.Errorf("%d pods, not started: %v", len(pods.Items), waiting)
		}
		return nil
	})
	t.Logf("a container of each of the %d images started on %s %s after the pods were made", len(images.All()), node, took.Round(time.Millisecond))
	noPullFailed(t, cp)

	// Its import done (else it could bring the image back itself).
	eventually(t, 60*time.Second, 300*time.Millisecond, node+"'s images all imported", func() error {
		if !strings.Contains(daemonLogs(t, h), "the runtime has every image of this binary") {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	served := func() int { return strings.Count(daemonLogs(t, h), "serving "+images.TestServer+" to a pull") }
	before := served()
	t.Logf("images %s's image-registry served to pulls while its images came in: %d", node, strings.Count(daemonLogs(t, h), " to a pull ("))

	// An image deleted by hand (as the kubelet's garbage collector
	// would) comes back from the binary, with the same manifest.
	c, err := images.Connect(filepath.Join(h.Root, "run/kubeboot/containerd/containerd.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	img, err := c.ImageService().Get(ctx, images.TestServer)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ImageService().Delete(ctx, images.TestServer); err != nil {
		t.Fatal(err)
	}
	kubectlOn(t, cp, cp, "delete", "pod", "-n", imagesNamespace, images.TestServerFile, "--wait=true")
	podsOfEveryImage(t, cp, node)
	start := time.Now()
	eventually(t, 60*time.Second, 300*time.Millisecond, "the deleted image pulled again", func() error {
		out, err := kubectlErr(cp, "get", "pod", "-n", imagesNamespace, images.TestServerFile, "-o", "jsonpath={.status.containerStatuses[0].imageID}")
		if err != nil || out == "" {
			return fmt.Errorf("no image yet: %v %s", err, out)
		}
		return nil
	})
	again, err := c.ImageService().Get(ctx, images.TestServer)
	if err != nil {
		t.Fatal(err)
	}
	if again.Target.Digest != img.Target.Digest {
		t.Errorf("pulled again as %s, imported as %s", again.Target.Digest, img.Target.Digest)
	}
	if n := served(); n != before+1 {
		t.Errorf("%s's image-registry served %s %d times after its deletion, want once", node, images.TestServer, n-before)
	}
	t.Logf("%s, deleted by hand, pulled again from the binary in %s (manifest %s)", images.TestServer, time.Since(start).Round(time.Millisecond), again.Target.Digest)
	noPullFailed(t, cp)
	kubectlOn(t, cp, cp, "delete", "namespace", imagesNamespace, "--wait=true")
}

// noPullFailed fails the test on any Event of a pod of imagesNamespace
// that tells of a failed pull.
func noPullFailed(t *testing.T, cp *nethost.Host) {
	t.Helper()
	var events corev1.EventList
	if err := json.Unmarshal([]byte(kubectlOn(t, cp, cp, "get", "events", "-n", imagesNamespace, "-o", "json")), &events); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if strings.Contains(e.Message, "ErrImagePull") || strings.Contains(e.Message, "ImagePullBackOff") || strings.Contains(e.Message, "Failed to pull") ||
			e.Reason == "BackOff" && strings.Contains(e.Message, "pulling image") {
			t.Errorf("pod %s: %s: %s", e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
}

// daemonLogs is everything the node's logs hold.
func daemonLogs(t *testing.T, h *nethost.Host) string {
	t.Helper()
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(h.Root, "var/log/kubeboot/*.log"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		b.Write(data)
	}
	return b.String()
}
