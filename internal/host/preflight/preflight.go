// Package preflight checks a node before kubeboot changes it. Every check
// has kubeadm's name (so --ignore-preflight-errors takes the same words)
// and says what to do when it fails.
package preflight

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
)

// Check is one pre-flight check.
type Check struct {
	Name string
	// Run returns warnings (printed, never fatal) and an error (fatal
	// unless ignored).
	Run func() (warnings []string, err error)
}

// Error lists every failed check.
type Error struct{ Failed []string }

func (e *Error) Error() string {
	return "[preflight] Some fatal errors occurred:\n" + strings.Join(e.Failed, "\n") +
		"\n[preflight] If you know what you are doing, you can make a check non-fatal with `--ignore-preflight-errors=...`"
}

// Run runs every check, printing warnings and ignored errors to out, and
// returns an *Error listing the failures not ignored. ignore holds check
// names, or "all".
func Run(checks []Check, ignore []string, out io.Writer) error {
	ignored := map[string]bool{}
	for _, i := range ignore {
		ignored[strings.ToLower(i)] = true
	}
	var failed []string
	for _, c := range checks {
		warnings, err := c.Run()
		for _, w := range warnings {
			fmt.Fprintf(out, "\t[WARNING %s]: %s\n", c.Name, w)
		}
		if err == nil {
			continue
		}
		if ignored["all"] || ignored[strings.ToLower(c.Name)] {
			fmt.Fprintf(out, "\t[WARNING %s]: %v\n", c.Name, err)
			continue
		}
		failed = append(failed, fmt.Sprintf("\t[ERROR %s]: %v", c.Name, err))
	}
	if len(failed) > 0 {
		return &Error{Failed: failed}
	}
	return nil
}

// IsPrivilegedUser requires root.
func IsPrivilegedUser() Check {
	return Check{Name: "IsPrivilegedUser", Run: func() ([]string, error) {
		if os.Geteuid() != 0 {
			return nil, errors.New("user is not running as root: run kubeboot with sudo")
		}
		return nil, nil
	}}
}

// Port requires a TCP port to be free on every address.
func Port(port int) Check {
	return Check{Name: "Port-" + strconv.Itoa(port), Run: func() ([]string, error) {
		l, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(port)))
		if err != nil {
			return nil, fmt.Errorf("port %d is in use: stop what listens on it (`ss -ltnp 'sport = :%d'` shows it), or run `kubeboot reset` if it is an earlier kubeboot", port, port)
		}
		l.Close()
		return nil, nil
	}}
}

// FileAvailable requires a file not to exist yet.
func FileAvailable(fs fsys.FS, nodePath string) Check {
	return Check{Name: "FileAvailable-" + strings.ReplaceAll(nodePath, "/", "-"), Run: func() ([]string, error) {
		if fsys.Exists(fs, nodePath) {
			return nil, fmt.Errorf("%s already exists: this node was initialised before; run `kubeboot reset` first", fs.Path(nodePath))
		}
		return nil, nil
	}}
}

// DirAvailable requires a directory to be absent or empty.
func DirAvailable(fs fsys.FS, nodePath string) Check {
	return Check{Name: "DirAvailable-" + strings.ReplaceAll(nodePath, "/", "-"), Run: func() ([]string, error) {
		entries, err := os.ReadDir(fs.Path(nodePath))
		if err != nil || len(entries) == 0 {
			return nil, nil
		}
		names := make([]string, 0, len(entries))
		for _, e := range entries {
			names = append(names, e.Name())
		}
		sort.Strings(names)
		return nil, fmt.Errorf("%s is not empty (%s): this node was initialised before; run `kubeboot reset` first", fs.Path(nodePath), strings.Join(names, ", "))
	}}
}

// FileExisting requires a file to exist.
func FileExisting(file, fix string) Check {
	return Check{Name: "FileExisting-" + strings.ReplaceAll(file, "/", "-"), Run: func() ([]string, error) {
		if _, err := os.Stat(file); err != nil {
			return nil, fmt.Errorf("%s does not exist: %s", file, fix)
		}
		return nil, nil
	}}
}

// InPath requires an executable in PATH.
func InPath(name, fix string) Check {
	return Check{Name: "FileExisting-" + name, Run: func() ([]string, error) {
		if _, err := exec.LookPath(name); err != nil {
			return nil, fmt.Errorf("%s not found in PATH: %s", name, fix)
		}
		return nil, nil
	}}
}

// MaxSocketPath is the longest unix socket path containerd's ttrpc
// listener accepts (sockaddr_un on BSD; Linux allows 107 bytes).
const MaxSocketPath = 104

// SocketPaths requires the unix sockets a node listens on under its root
// to fit in MaxSocketPath: with a long --root a component exits at once
// ("unix socket path too long") and the node waits for it in vain.
func SocketPaths(fs fsys.FS, nodePaths ...string) Check {
	return Check{Name: "SocketPathLength", Run: func() ([]string, error) {
		longest := ""
		for _, p := range nodePaths {
			if full := fs.Path(p); len(full) > len(longest) {
				longest = full
			}
		}
		if len(longest) <= MaxSocketPath {
			return nil, nil
		}
		return nil, fmt.Errorf("the root %s is too long for the unix sockets under it: %s is %d bytes, over the %d a socket path may have; use a root path of at most %d bytes",
			fs.Path("/"), longest, len(longest), MaxSocketPath, len(strings.TrimSuffix(fs.Path("/"), "/"))-(len(longest)-MaxSocketPath))
	}}
}
