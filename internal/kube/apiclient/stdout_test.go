package apiclient

import (
	"bytes"
	"fmt"
	"os"
	"testing"
)

// What kubeadm's functions print with fmt.Println reaches the writer
// given, and standard output is the process's again after.
func TestKubeadmPrintsTo(t *testing.T) {
	var b bytes.Buffer
	saved := os.Stdout
	err := KubeadmPrintsTo(&b, func() error {
		fmt.Println("[bootstrap-token] a kubeadm line")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != "[bootstrap-token] a kubeadm line\n" {
		t.Errorf("captured %q", b.String())
	}
	if os.Stdout != saved {
		t.Errorf("os.Stdout not restored")
	}
}
