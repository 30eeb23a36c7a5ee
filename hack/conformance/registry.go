package main

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	e2eimage "k8s.io/kubernetes/test/utils/image"

	"github.com/kubeboot/kubeboot/test/nethost"
)

// localRepo is where the harness names the images it builds (its
// LOCAL_REPO); each image's upstream name is the e2e manifest's.
const localRepo = "local.test/e2e/"

// upstreamName maps an image name the harness gives (local.test/e2e/N:V, or
// already an upstream name) to its name upstream, from the e2e suite's own
// image manifest (k8s.io/kubernetes/test/utils/image at the pinned
// version), so the mapping cannot drift from what the suite asks for.
func upstreamName(ref string) (string, error) {
	if !strings.HasPrefix(ref, localRepo) {
		return ref, nil
	}
	last := strings.TrimPrefix(ref, localRepo)
	var found []string
	for _, c := range e2eimage.GetOriginalImageConfigs() {
		if up := c.GetE2EImage(); strings.HasSuffix(up, "/"+last) {
			found = append(found, up)
		}
	}
	slices.Sort(found)
	found = slices.Compact(found)
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", fmt.Errorf("%s: no image %s in the e2e manifest", ref, last)
	}
	return "", fmt.Errorf("%s: several upstream images end in %s: %v", ref, last, found)
}

// mirroredRegistries lists the registries (host names) of the upstream
// names of the harness's images (its images/list.txt): the ones each node
// gets a mirror for.
func mirroredRegistries(listFile string) ([]string, error) {
	b, err := os.ReadFile(listFile)
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for _, ref := range strings.Fields(string(b)) {
		up, err := upstreamName(ref)
		if err != nil {
			return nil, err
		}
		r, err := name.ParseReference(up)
		if err != nil {
			return nil, err
		}
		set[r.Context().RegistryStr()] = true
	}
	return slices.Sorted(maps.Keys(set)), nil
}

// pushArchive pushes every image of a docker-save archive to the registry
// at base (host:port, plain HTTP) under its upstream name's repository and
// tag: containerd asks a mirror for /v2/<repository>/manifests/<tag> of the
// name it pulls.
func pushArchive(base, archive string) error {
	opener := func() (io.ReadCloser, error) { return os.Open(archive) }
	m, err := tarball.LoadManifest(opener)
	if err != nil {
		return fmt.Errorf("%s: %w", archive, err)
	}
	pushed := map[string]bool{}
	for _, d := range m {
		for _, tag := range d.RepoTags {
			up, err := upstreamName(tag)
			if err != nil {
				return err
			}
			r, err := name.NewTag(up)
			if err != nil {
				return err
			}
			dst := base + "/" + r.RepositoryStr() + ":" + r.TagStr()
			if pushed[dst] {
				continue
			}
			pushed[dst] = true
			t, err := name.NewTag(tag)
			if err != nil {
				return err
			}
			img, err := tarball.Image(opener, &t)
			if err != nil {
				return fmt.Errorf("%s in %s: %w", tag, archive, err)
			}
			to, err := name.NewTag(dst, name.Insecure)
			if err != nil {
				return err
			}
			start := time.Now()
			if err := remote.Write(to, img); err != nil {
				return fmt.Errorf("push %s as %s: %w", tag, up, err)
			}
			fmt.Printf("pushed %s as %s in %s\n", tag, up, time.Since(start).Round(time.Millisecond))
		}
	}
	return nil
}

// registry is a distribution registry running on a test host.
type registry struct {
	cmd  *exec.Cmd
	addr string // host:port
	log  string // its access log
}

// startRegistry builds the registry of hack/registry (a module of its own)
// into dir and starts it on host h at h.IP:5000, storing under dir.
func startRegistry(h *nethost.Host, dir string) (*registry, error) {
	bin := filepath.Join(dir, "registry")
	start := time.Now()
	build := exec.Command("go", "build", "-C", "hack/registry", "-ldflags", "-s -w", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build the registry (hack/registry): %v\n%s", err, out)
	}
	fmt.Printf("[conformance] built the registry (github.com/distribution/distribution/v3) in %s\n", time.Since(start).Round(time.Second))
	r := &registry{addr: h.IP + ":5000", log: filepath.Join(dir, "registry.log")}
	config := fmt.Sprintf(`version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: %s
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: %s
`, filepath.Join(dir, "registry-data"), r.addr)
	cfgFile := filepath.Join(dir, "registry.yml")
	if err := os.WriteFile(cfgFile, []byte(config), 0o644); err != nil {
		return nil, err
	}
	logf, err := os.Create(r.log)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	// nsenter execs the registry itself: the pid is the registry's.
	r.cmd = h.Command(bin, "serve", cfgFile)
	r.cmd.Stdout, r.cmd.Stderr = logf, logf
	if err := nethost.Start(r.cmd); err != nil {
		return nil, err
	}
	client := &http.Client{Transport: &http.Transport{DialContext: h.DialContext}, Timeout: 2 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get("http://" + r.addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return r, nil
			}
		}
		if time.Now().After(deadline) {
			r.stop()
			b, _ := os.ReadFile(r.log)
			return nil, fmt.Errorf("the registry did not answer on %s in 30s: %v\n%s", r.addr, err, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (r *registry) stop() {
	r.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck
	done := make(chan struct{})
	go func() { r.cmd.Wait(); close(done) }() //nolint:errcheck
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		r.cmd.Process.Kill() //nolint:errcheck
		<-done
	}
}

// manifestByTag matches an access-log line of a manifest resolved by tag
// on behalf of a registry (containerd names the registry it mirrors in
// ns=): one per pull that reached the registry.
var manifestByTag = regexp.MustCompile(`"(?:GET|HEAD) /v2/(\S+)/manifests/([^:/?\s]+)\?ns=([^ &"]+)`)

// pulls counts the pulls of the access log by upstream repository.
func (r *registry) pulls() (map[string]int, error) {
	f, err := os.Open(r.log)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if m := manifestByTag.FindStringSubmatch(sc.Text()); m != nil {
			out[m[3]+"/"+m[1]]++
		}
	}
	return out, sc.Err()
}

// runPush is the -push mode, the harness's IMPORT_CMD: push archives.
func runPush(base string, archives []string) error {
	if len(archives) == 0 {
		return fmt.Errorf("-push %s: give the archives to push", base)
	}
	for _, a := range archives {
		if err := pushArchive(base, a); err != nil {
			return err
		}
	}
	return nil
}
