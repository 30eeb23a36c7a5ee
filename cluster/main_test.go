package cluster_test

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kubeboot/kubeboot/test/nethost"
)

// exampleAddressEnv carries, into the network namespace the examples run
// in, the address they advertise.
const exampleAddressEnv = "KUBEBOOT_EXAMPLE_ADDRESS"

// hostAddress is one of this host's addresses, as the examples' API
// server advertises it: kube-apiserver refuses a loopback one.
var hostAddress = os.Getenv(exampleAddressEnv)

// TestMain runs the examples that start a control plane in a host of
// their own (a network namespace with its own address: this machine's own
// address is not theirs to use), when a kubeboot binary is at hand
// (KUBEBOOT_BINARY or kubeboot on PATH), as root, not under -short and
// with KUBEBOOT_EXAMPLES=1 (`make examples`, which the test command runs).
// Otherwise it says it leaves them out. An example
// with no output comment is compiled, not run.
func TestMain(m *testing.M) {
	flag.Parse()
	if hostAddress != "" {
		os.Exit(m.Run()) // inside the examples' host
	}
	if bin := os.Getenv("KUBEBOOT_BINARY"); bin != "" {
		os.Setenv("PATH", filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	bin, err := exec.LookPath("kubeboot")
	why := ""
	switch {
	case testing.Short():
		why = "-short"
	case err != nil:
		why = "no kubeboot binary (KUBEBOOT_BINARY or PATH)"
	case os.Geteuid() != 0:
		why = "not root: their host is a network namespace"
	case os.Getenv("KUBEBOOT_EXAMPLES") != "1":
		// A pod of theirs would be counted by the end-to-end tests that
		// `go test ./...` runs beside them: `make examples` runs them alone.
		why = "KUBEBOOT_EXAMPLES=1 runs them, as `make examples` does"
	}
	if why != "" {
		if flag.Lookup("test.run").Value.String() == "" {
			fmt.Printf("cluster: the examples that start a control plane are not run (%s)\n", why)
			flag.Set("test.run", "^Test")
		}
		os.Exit(m.Run())
	}
	os.Exit(inExampleHost(bin))
}

// inExampleHost runs this test binary again, with its arguments, inside
// a host made for it, and removes the host after.
func inExampleHost(bin string) int {
	if err := nethost.BecomeSubreaper(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "kbex-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	h, err := nethost.New("kbex", "10.219.0.2", dir, bin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer h.Close()
	// The examples' roots go under the host's directory: an example that
	// fails (log.Fatal) skips its deferred Reset, and its node is reset
	// here, inside the host, before the host goes.
	tmp := filepath.Join(dir, "e") // short: the roots' socket paths must fit in 104 bytes
	if err := os.Mkdir(tmp, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer resetLeftovers(h, tmp, bin)
	cmd := h.Command(os.Args[0], os.Args[1:]...)
	cmd.Env = append(os.Environ(), exampleAddressEnv+"="+h.IP, "TMPDIR="+tmp)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := nethost.Start(cmd); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := cmd.Wait(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// resetLeftovers resets, inside the host, every root an example left.
func resetLeftovers(h *nethost.Host, tmp, bin string) {
	entries, _ := os.ReadDir(tmp)
	for _, e := range entries {
		root := filepath.Join(tmp, e.Name())
		fmt.Fprintf(os.Stderr, "cluster: resetting the node an example left under %s\n", root)
		if out, err := nethost.Run(h.Command(bin, "--root", root, "reset", "--force")); err != nil {
			fmt.Fprintf(os.Stderr, "%v\n%s\n", err, out)
		}
	}
}
