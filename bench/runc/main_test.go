package main

import (
	"os"
	"testing"
)

func TestStatFields(t *testing.T) {
	f, err := statFields(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if f[0] != "R" && f[0] != "S" {
		t.Errorf("own state %q, want R or S", f[0])
	}
	if zombie(os.Getpid()) {
		t.Error("own process seen as a zombie")
	}
	if _, err := statFields(1 << 30); err == nil {
		t.Error("no error for a pid that does not exist")
	}
}
