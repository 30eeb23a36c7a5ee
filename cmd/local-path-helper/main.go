// Command local-path-helper is the only file of kubeboot's local-path
// helper image: the setup and teardown command local-path-provisioner
// runs in a helper pod on the volume's node (its config's setupCommand and
// teardownCommand), in place of upstream's busybox shell scripts, which
// would need an image kubeboot does not carry. It is called as
//
//	local-path-helper -p PATH -s SIZE_BYTES -m Filesystem|Block -a create|delete
//
// with VOL_DIR (the same PATH) in its environment, and makes the volume's
// directory (mode 0777, as upstream's script) or removes it.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "local-path-helper:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("local-path-helper", flag.ContinueOnError)
	dir := fs.String("p", os.Getenv("VOL_DIR"), "the volume's directory")
	fs.String("s", "", "the volume's size in bytes (not enforced: a local path is not a quota)")
	mode := fs.String("m", "Filesystem", "the volume mode")
	action := fs.String("a", "", "create or delete")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || !filepath.IsAbs(*dir) || filepath.Clean(*dir) == "/" {
		return fmt.Errorf("-p %q: an absolute volume directory is required", *dir)
	}
	switch *action {
	case "create":
		if *mode != "Filesystem" {
			return fmt.Errorf("volume mode %s: local-path volumes are directories (Filesystem) only", *mode)
		}
		if err := os.MkdirAll(*dir, 0o777); err != nil {
			return err
		}
		// MkdirAll's mode passes through the umask; upstream's script
		// makes the directory 0777 for pods of any user.
		return os.Chmod(*dir, 0o777)
	case "delete":
		return os.RemoveAll(*dir)
	default:
		return fmt.Errorf("-a %q: create or delete", *action)
	}
}
