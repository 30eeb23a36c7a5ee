package node

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEnsureLink(t *testing.T) {
	const nodePath = "/var/lib/kubeboot/storage/cp"
	host := t.TempDir()
	link := filepath.Join(host, nodePath)
	mine := filepath.Join(t.TempDir(), "root")
	other := filepath.Join(t.TempDir(), "root")
	dir := mine + nodePath
	for _, d := range []string{dir, other + nodePath} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	alive := map[string]bool{}
	live := func(root string) bool { return alive[root] }
	points := func(want string) {
		t.Helper()
		if got, err := os.Readlink(link); err != nil || got != want {
			t.Fatalf("%s -> %q (%v), want -> %q", link, got, err, want)
		}
	}

	if stale, err := ensureLink(link, dir, nodePath, "cp", live); err != nil || stale != "" {
		t.Fatalf("first: stale %q, err %v", stale, err)
	}
	points(dir)
	if stale, err := ensureLink(link, dir, nodePath, "cp", live); err != nil || stale != "" {
		t.Fatalf("again: stale %q, err %v", stale, err)
	}

	// Another node of the same name, running, owns the link: refused, untouched.
	os.Remove(link)
	os.Symlink(other+nodePath, link)
	alive[other] = true
	if _, err := ensureLink(link, dir, nodePath, "cp", live); err == nil || !strings.Contains(err.Error(), "another node named cp") {
		t.Fatalf("live owner: err %v, want refused", err)
	}
	points(other + nodePath)

	// The same node, no longer running (killed, never reset): replaced.
	alive[other] = false
	if stale, err := ensureLink(link, dir, nodePath, "cp", live); err != nil || stale != other+nodePath {
		t.Fatalf("dead owner: stale %q, err %v", stale, err)
	}
	points(dir)

	// A link into a root that is gone: replaced, whatever live says.
	os.Remove(link)
	gone := filepath.Join(t.TempDir(), "gone") + nodePath
	os.Symlink(gone, link)
	alive = map[string]bool{strings.TrimSuffix(gone, nodePath): true}
	if stale, err := ensureLink(link, dir, nodePath, "cp", live); err != nil || stale != gone {
		t.Fatalf("dangling: stale %q, err %v", stale, err)
	}
	points(dir)

	// A directory there: the volumes of a node with --root /, refused.
	os.Remove(link)
	os.MkdirAll(link, 0o711)
	if _, err := ensureLink(link, dir, nodePath, "cp", live); err == nil || !strings.Contains(err.Error(), "is not a link") {
		t.Fatalf("directory: err %v, want refused", err)
	}
}
