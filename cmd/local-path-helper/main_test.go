package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCreateAndDelete(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "w1", "pvc-1_ns_claim")
	if err := run([]string{"-p", dir, "-s", "1048576", "-m", "Filesystem", "-a", "create"}); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o777 || !st.IsDir() {
		t.Fatalf("after create: %v %v", st, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"-p", dir, "-s", "1048576", "-m", "Filesystem", "-a", "delete"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("after delete: %v", err)
	}
	for _, args := range [][]string{
		{"-p", "relative", "-a", "create"},
		{"-p", "/", "-a", "delete"},
		{"-p", dir, "-m", "Block", "-a", "create"},
		{"-p", dir, "-a", "resize"},
	} {
		if err := run(args); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
