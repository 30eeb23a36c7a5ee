package helpers

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fakeBundle is an embedded set of helpers, packed as hack/helpers packs
// them; it counts the parts released.
func fakeBundle(t *testing.T, content map[string]string) *bundle {
	t.Helper()
	var pack strings.Builder
	m := Manifest{}
	for _, name := range slices.Sorted(maps.Keys(content)) {
		c := content[name]
		z, err := Compress([]byte(c))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(c))
		m.Helpers = append(m.Helpers, Entry{Name: name, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(c)),
			Offset: int64(pack.Len()), Compressed: int64(len(z))})
		pack.Write(z)
	}
	b, _ := json.Marshal(m)
	return &bundle{manifest: b, pack: pack.String()}
}

func TestNotBuilt(t *testing.T) {
	if _, err := load(nil); !errors.Is(err, ErrNotBuilt) {
		t.Errorf("load(nil) = %v, want ErrNotBuilt", err)
	}
	if _, err := install(&bundle{}, t.TempDir(), t.Logf); !errors.Is(err, ErrNotBuilt) {
		t.Errorf("install without a manifest = %v, want ErrNotBuilt", err)
	}
}

// Install writes every helper into a directory named by the set's digest,
// links current to it, verifies them at the next call and rewrites (with a
// log line) one whose bytes changed.
func TestInstall(t *testing.T) {
	bundle := fakeBundle(t, map[string]string{"pause": "pause bytes", "bridge": "bridge bytes"})
	dir := t.TempDir()
	res, err := install(bundle, dir, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Written) != 2 || !res.Relinked {
		t.Errorf("first install: %+v", res)
	}
	for name, want := range map[string]string{"pause": "pause bytes", "bridge": "bridge bytes"} {
		b, err := os.ReadFile(filepath.Join(dir, Current, name))
		if err != nil || string(b) != want {
			t.Errorf("%s = %q, %v", name, b, err)
		}
		if st, _ := os.Stat(filepath.Join(dir, Current, name)); st == nil || st.Mode().Perm() != 0o755 {
			t.Errorf("%s mode %v", name, st)
		}
	}
	res, err = install(bundle, dir, t.Logf)
	if err != nil || res.Verified != 2 || len(res.Written) != 0 || res.Relinked {
		t.Errorf("second install: %+v %v", res, err)
	}
	// A helper whose bytes differ is refused and rewritten, with a log line.
	os.WriteFile(filepath.Join(dir, Current, "bridge"), []byte("tampered"), 0o755)
	var logged []string
	logf := func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
	res, err = install(bundle, dir, logf)
	if err != nil || len(res.Mismatched) != 1 || res.Mismatched[0] != "bridge" {
		t.Fatalf("after tampering: %+v %v", res, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, Current, "bridge")); string(b) != "bridge bytes" {
		t.Errorf("bridge not rewritten: %q", b)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "rewriting it") {
		t.Errorf("log lines %q", logged)
	}
	// Another binary's set: a new directory, current moves, the old one goes.
	old := res.Dir
	res, err = install(fakeBundle(t, map[string]string{"pause": "new pause"}), dir, t.Logf)
	if err != nil || !res.Relinked || res.Dir == old || len(res.Removed) != 1 {
		t.Fatalf("new set: %+v %v", res, err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("old set still there: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, Current, "pause")); string(b) != "new pause" {
		t.Errorf("pause = %q", b)
	}
}

// withLinks is b with the manifest's links.
func withLinks(t *testing.T, b *bundle, links map[string]string) *bundle {
	t.Helper()
	m := Manifest{}
	if err := json.Unmarshal(b.manifest, &m); err != nil {
		t.Fatal(err)
	}
	m.Links = links
	b.manifest, _ = json.Marshal(m)
	return b
}

// The manifest's links are made beside the helpers, each to its helper,
// mended when they point elsewhere, and part of the set's digest; a link
// to a helper the binary does not carry is refused.
func TestInstallLinks(t *testing.T) {
	engines := map[string]string{"network-engines": "engines bytes", "pause": "pause bytes"}
	links := map[string]string{"flannel": "network-engines", "kube-router": "network-engines"}
	dir := t.TempDir()
	var logged []string
	logf := func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
	res, err := install(withLinks(t, fakeBundle(t, engines), links), dir, logf)
	if err != nil || !slices.Equal(res.Linked, []string{"flannel", "kube-router"}) || len(logged) != 0 {
		t.Fatalf("install: %+v %v, log %q", res, err, logged)
	}
	for name := range links {
		p := filepath.Join(dir, Current, name)
		if target, err := os.Readlink(p); err != nil || target != "network-engines" {
			t.Errorf("%s links to %q (%v)", name, target, err)
		}
		if b, err := os.ReadFile(p); err != nil || string(b) != "engines bytes" {
			t.Errorf("%s reads %q (%v)", name, b, err)
		}
	}
	// One link gone, one pointing at another helper.
	os.Remove(filepath.Join(dir, Current, "kube-router"))
	os.Remove(filepath.Join(dir, Current, "flannel"))
	os.Symlink("pause", filepath.Join(dir, Current, "flannel"))
	res, err = install(withLinks(t, fakeBundle(t, engines), links), dir, logf)
	if err != nil || !slices.Equal(res.Linked, []string{"flannel", "kube-router"}) || res.Relinked {
		t.Fatalf("mending: %+v %v", res, err)
	}
	if len(logged) != 2 || !strings.Contains(logged[0], "flannel did not link to network-engines") {
		t.Errorf("mending logged %q", logged)
	}
	if target, _ := os.Readlink(filepath.Join(dir, Current, "flannel")); target != "network-engines" {
		t.Errorf("flannel still links to %q", target)
	}
	res, err = install(withLinks(t, fakeBundle(t, engines), links), dir, t.Logf)
	if err != nil || len(res.Linked) != 0 {
		t.Errorf("third install: %+v %v", res, err)
	}
	plain, _ := load(fakeBundle(t, engines))
	linked, _ := load(withLinks(t, fakeBundle(t, engines), links))
	if plain.Digest() == linked.Digest() {
		t.Error("the links do not change the set's digest")
	}
	for _, c := range []struct{ name, link, target, err string }{
		{"to no helper", "flannel", "flanneld", "carries no such helper"},
		{"to an image's helper", "provisioner", LocalPathProvisioner, "for images only"},
		{"in a helper's stead", "pause", "network-engines", "a helper has that name"},
		{"in current's stead", Current, "network-engines", "not a file name"},
		{"out of the directory", "../flannel", "network-engines", "not a file name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			files := map[string]string{"network-engines": "engines bytes", "pause": "pause bytes", LocalPathProvisioner: "image bytes"}
			_, err := install(withLinks(t, fakeBundle(t, files), map[string]string{c.link: c.target}), t.TempDir(), t.Logf)
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("install = %v, want an error with %q", err, c.err)
			}
		})
	}
}

// A corrupt embedded copy never takes the helper's name.
func TestInstallRefusesCorruptCopy(t *testing.T) {
	// The same length, so only the hash tells them apart.
	other := fakeBundle(t, map[string]string{"pause": "other bytes"})
	bundle := fakeBundle(t, map[string]string{"pause": "pause bytes"})
	bundle.pack = other.pack
	dir := t.TempDir()
	if _, err := install(bundle, dir, t.Logf); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("install = %v", err)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "*", "pause*"))
	if len(matches) != 0 {
		t.Errorf("left %v", matches)
	}
}

// Each reader of a helper releases the part of the pack it read when
// closed; a pack whose manifest points past its end is refused.
func TestOpenReleases(t *testing.T) {
	b := fakeBundle(t, map[string]string{"pause": "pause bytes", "bridge": "bridge bytes"})
	var released []string
	b.release = func(part string) { released = append(released, part) }
	m, err := load(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range m.Helpers {
		r, err := open(b, e)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		if err != nil || int64(len(got)) != e.Size {
			t.Fatalf("%s: %q, %v", e.Name, got, err)
		}
		r.Close()
		if want := b.pack[e.Offset : e.Offset+e.Compressed]; released[len(released)-1] != want {
			t.Errorf("%s: released %q, want its part of the pack", e.Name, released[len(released)-1])
		}
	}
	b.pack = b.pack[:len(b.pack)-1]
	if _, err := load(b); err == nil || !strings.Contains(err.Error(), "pack") {
		t.Errorf("load of a short pack = %v", err)
	}
}

// releasePages drops the pages of a file mapping a reader has read (they
// no longer count as the process's), and the bytes read again are the
// same; memory that is not a read-only file mapping is never released.
func TestReleasePages(t *testing.T) {
	page := os.Getpagesize()
	data := bytes.Repeat([]byte("kubeboot"), 64*page/8)
	p := filepath.Join(t.TempDir(), "pack")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mapped, err := unix.Mmap(int(f.Fd()), 0, len(data), unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mapped)
	s := unsafe.String(&mapped[0], len(mapped))
	if !fileMapped(s) || releaser(s) == nil {
		t.Fatal("a read-only file mapping is not seen as one")
	}
	if releaser(strings.Repeat("x", 3*page)) != nil || releaser(string(data)) != nil {
		t.Fatal("heap memory would be released")
	}
	writable, err := unix.Mmap(int(f.Fd()), 0, len(data), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(writable)
	if fileMapped(unsafe.String(&writable[0], len(writable))) {
		t.Fatal("a writable mapping of the file would be released")
	}
	if !bytes.Equal([]byte(s), data) {
		t.Fatal("mapping differs from the file")
	}
	before := mappingRss(t, mapped)
	releasePages(s[page/2 : len(s)-page/2]) // whole pages 1..62
	after := mappingRss(t, mapped)
	if before != 64*page/1024 || after != before-62*page/1024 {
		t.Errorf("Rss of the mapping %d KiB before, %d after releasing 62 of its 64 pages", before, after)
	}
	if !bytes.Equal([]byte(s), data) {
		t.Error("bytes read after the release differ")
	}
}

// mappingRss is the Rss, in KiB, of the process's mapping that starts at
// the first byte of m.
func mappingRss(t *testing.T, m []byte) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	start := strconv.FormatUint(uint64(uintptr(unsafe.Pointer(&m[0]))), 16)
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 6 && strings.Contains(f[0], "-"):
			in = strings.HasPrefix(f[0], start+"-")
		case in && len(f) == 3 && f[0] == "Rss:":
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	t.Fatalf("no mapping at %s in smaps", start)
	return 0
}
