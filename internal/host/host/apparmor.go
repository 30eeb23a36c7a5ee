package host

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// ContainerdAppArmorProfile is the profile containerd's CRI confines
// containers with on an AppArmor host (a pod's RuntimeDefault, the
// kubelet's default): containerd generates it and loads it into the
// kernel with apparmor_parser at the first container it creates
// (github.com/containerd/containerd/v2/internal/cri/server:
// defaultApparmorProfile).
const ContainerdAppArmorProfile = "cri-containerd.apparmor.d"

// Where AppArmor is looked at and changed; variables for tests.
var (
	// AppArmorFS is AppArmor's securityfs directory: "profiles" lists
	// the loaded profiles, ".remove" unloads the one named.
	AppArmorFS = "/sys/kernel/security/apparmor"
	// AppArmorParser is the program containerd loads profiles with
	// (Debian's apparmor package).
	AppArmorParser = "/sbin/apparmor_parser"
	// AppArmorEnabled is the kernel's switch.
	AppArmorEnabled = "/sys/module/apparmor/parameters/enabled"
	// Proc is the process table the profiles' users are looked for in.
	Proc = "/proc"
)

// AppArmorConfinesContainers reports whether containerd confines this
// machine's containers with AppArmor: the kernel has it on and the
// apparmor package's parser is installed (containerd's own test,
// pkg/apparmor.hostSupports).
func AppArmorConfinesContainers() bool {
	if _, err := os.Stat(AppArmorFS); err != nil || os.Getenv("container") != "" {
		return false
	}
	if _, err := os.Stat(AppArmorParser); err != nil {
		return false
	}
	b, err := os.ReadFile(AppArmorEnabled)
	return err == nil && len(b) > 1 && b[0] == 'Y'
}

// AppArmorProfileLoaded reports whether a profile is loaded in the kernel.
func AppArmorProfileLoaded(name string) bool {
	f, err := os.Open(filepath.Join(AppArmorFS, "profiles"))
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if profileOf(s.Text()) == name {
			return true
		}
	}
	return false
}

// profileOf is the profile's name in AppArmor's "name (mode)", as the
// profiles file lists them and a process's attr/current holds its own.
func profileOf(s string) string {
	name, _, _ := strings.Cut(strings.TrimSpace(s), " (")
	return name
}

// appArmorUsers counts the processes confined by a profile.
func appArmorUsers(name string) int {
	entries, _ := os.ReadDir(Proc)
	n := 0
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile(filepath.Join(Proc, e.Name(), "attr", "current"))
		if err != nil {
			continue
		}
		if profileOf(string(b)) == name {
			n++
		}
	}
	return n
}

// unloadAppArmorProfile removes a profile from the kernel (what
// `apparmor_parser -R` does) unless a process is still confined by it.
func unloadAppArmorProfile(name string, logf func(string, ...any)) {
	if !AppArmorProfileLoaded(name) {
		return
	}
	if n := appArmorUsers(name); n > 0 {
		logf("WARNING: the AppArmor profile %s stays loaded: %d process(es) of another containerd run under it", name, n)
		return
	}
	if err := os.WriteFile(filepath.Join(AppArmorFS, ".remove"), []byte(name), 0); err != nil {
		if !errors.Is(err, os.ErrNotExist) { // else gone meanwhile
			logf("WARNING: unloading the AppArmor profile %s: %v", name, err)
		}
		return
	}
	logf("Unloaded the AppArmor profile %s (containerd's, for containers)", name)
}
