package helpers

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// fakeBundle is an embedded set of two helpers.
func fakeBundle(t *testing.T, content map[string]string) fstest.MapFS {
	t.Helper()
	fsys := fstest.MapFS{}
	m := Manifest{}
	for name, c := range content {
		z, err := Compress([]byte(c))
		if err != nil {
			t.Fatal(err)
		}
		fsys[CompressedName(name)] = &fstest.MapFile{Data: z}
		sum := sha256.Sum256([]byte(c))
		m.Helpers = append(m.Helpers, Entry{Name: name, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(c))})
	}
	b, _ := json.Marshal(m)
	fsys[ManifestFile] = &fstest.MapFile{Data: b}
	return fsys
}

func TestNotBuilt(t *testing.T) {
	if _, err := load(nil); !errors.Is(err, ErrNotBuilt) {
		t.Errorf("load(nil) = %v, want ErrNotBuilt", err)
	}
	if _, err := install(fstest.MapFS{}, t.TempDir(), t.Logf); !errors.Is(err, ErrNotBuilt) {
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

// A corrupt embedded copy never takes the helper's name.
func TestInstallRefusesCorruptCopy(t *testing.T) {
	bundle := fakeBundle(t, map[string]string{"pause": "pause bytes"})
	z, _ := Compress([]byte("other bytes"))
	bundle[CompressedName("pause")] = &fstest.MapFile{Data: z}
	dir := t.TempDir()
	if _, err := install(bundle, dir, t.Logf); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("install = %v", err)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "*", "pause*"))
	if len(matches) != 0 {
		t.Errorf("left %v", matches)
	}
}
