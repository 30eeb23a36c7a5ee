// Package upgrade replaces the components a node runs with those of
// another kubeboot binary, one component at a time, each until it is
// ready again, after kubeadm's version-skew policy allowed it; it keeps
// what it replaced so that a rollback puts it back.
//
// The new binary is installed content-addressed under the root and each
// component's spec names it (Spec.Exec): the node daemon restarts a
// component whose spec changed and nothing else. The daemon itself, and
// what it runs in its own process, keep the binary it was started from
// until it starts again.
package upgrade

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	kbversion "github.com/kubeboot/kubeboot/internal/base/version"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/host/nodestate"
	"github.com/kubeboot/kubeboot/internal/runtime/component"
	"github.com/kubeboot/kubeboot/internal/runtime/daemon"
)

// Node paths.
const (
	// BinDir holds the installed binaries, named by version and digest.
	BinDir = node.StateDir + "/upgrade/bin"
	// StateFile records the last upgrade of this node, for rollback.
	StateFile = node.StateDir + "/upgrade/state.json"
	// SnapshotDir holds the etcd snapshot taken before each apply.
	SnapshotDir = node.StateDir + "/upgrade/snapshots"
)

// State is what an upgrade changed on this node.
type State struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Binary string `json:"binary"`
	// Previous is each replaced component's Exec before ("" is the
	// daemon's own binary), in the order they were replaced.
	Previous []Replaced `json:"previous"`
	Snapshot string     `json:"snapshot,omitempty"`
	Done     bool       `json:"done"`
	// NodeVersion is the version the node's record gave before (package
	// nodestate), which a rollback puts back.
	NodeVersion string `json:"nodeVersion,omitempty"`
	// Kubeboot is the new binary's kubeboot release, NodeKubeboot the one
	// the node's record gave before.
	Kubeboot     string `json:"kubeboot,omitempty"`
	NodeKubeboot string `json:"nodeKubeboot,omitempty"`
}

// Replaced is one component an upgrade replaced.
type Replaced struct {
	Name string `json:"name"`
	Exec string `json:"exec"`
}

// BinaryVersion runs a kubeboot binary and returns the Kubernetes
// version it carries (from `version -o json`).
func BinaryVersion(ctx context.Context, bin string) (*version.Version, error) {
	v, _, err := BinaryInfo(ctx, bin)
	return v, err
}

// BinaryInfo is BinaryVersion with the whole of what the binary says of
// itself (its kubeboot release too).
func BinaryInfo(ctx context.Context, bin string) (*version.Version, kbversion.Info, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var info kbversion.Info
	out, err := exec.CommandContext(ctx, bin, "version", "-o", "json").Output()
	if err != nil {
		return nil, info, fmt.Errorf("%s is not a kubeboot binary that runs here, or one too old to upgrade to (`%s version -o json`: %v)", bin, bin, err)
	}
	if err := json.Unmarshal(out, &info); err != nil {
		return nil, info, fmt.Errorf("%s version -o json: %w", bin, err)
	}
	v, err := version.ParseSemantic(info.Kubernetes)
	if err != nil {
		return nil, info, fmt.Errorf("%s carries Kubernetes %q: %w", bin, info.Kubernetes, err)
	}
	return v, info, nil
}

// Install copies bin under the root as BinDir/kubeboot-<version>-<digest>
// (mode 0755, through a temporary file) and returns its host path; an
// identical copy already there is kept.
func Install(fs fsys.FS, bin string, v *version.Version) (string, error) {
	sum, err := fsys.FileSHA256(bin)
	if err != nil {
		return "", err
	}
	dst := fs.Path(path.Join(BinDir, fmt.Sprintf("kubeboot-v%s-%s", v, sum[:12])))
	if _, err := os.Stat(dst); err == nil {
		return dst, nil
	}
	if err := os.MkdirAll(path.Dir(dst), 0o755); err != nil {
		return "", err
	}
	f, err := os.Open(bin)
	if err != nil {
		return "", err
	}
	defer f.Close()
	tmp, err := os.CreateTemp(path.Dir(dst), ".kubeboot-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, f); err != nil {
		tmp.Close()
		return "", err
	}
	if err := errors.Join(tmp.Chmod(0o755), tmp.Sync(), tmp.Close()); err != nil {
		return "", err
	}
	return dst, os.Rename(tmp.Name(), dst)
}

// Components are the components of this node an upgrade replaces, in
// the table's order (control plane first): those the daemon runs as
// processes. Its in-process ones go with the daemon.
func Components(fs fsys.FS, inProcess func(string) bool) ([]component.Spec, error) {
	specs, err := (component.Store{FS: fs}).Load()
	if err != nil {
		return nil, err
	}
	byName := map[string]component.Spec{}
	for _, s := range specs {
		byName[s.Name] = s
	}
	var out []component.Spec
	for _, d := range component.Table {
		s, ok := byName[d.Name]
		if !ok || (inProcess(d.Name) && s.Exec == "") {
			continue
		}
		// An executable that is not kubeboot (a runtime of the
		// operator's) is not ours to replace.
		if s.Exec != "" && !strings.HasPrefix(s.Exec, fs.Path(BinDir)+"/") {
			continue
		}
		out = append(out, s)
	}
	return out, nil
}

// ReadState reads the last upgrade's record; nil when there was none.
func ReadState(fs fsys.FS) (*State, error) {
	b, err := fs.ReadFile(StateFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", fs.Path(StateFile), err)
	}
	return &st, nil
}

func writeState(fs fsys.FS, st *State) error { return writeStateTo(fs, StateFile, st) }

func writeStateTo(fs fsys.FS, file string, st *State) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return fs.WriteFile(file, append(b, '\n'), 0o600)
}

// Replace runs each component from binary, one at a time, each until it
// is ready, recording in st what it replaced as it goes, so that a
// failure half-way can be rolled back.
func Replace(ctx context.Context, fs fsys.FS, specs []component.Spec, binary string, st *State, timeout time.Duration, logf func(string, ...any)) error {
	rec, err := component.Store{FS: fs}.Node()
	if err != nil {
		return err
	}
	if len(st.Previous) == 0 {
		st.NodeVersion, st.NodeKubeboot = rec.Version, rec.Kubeboot
	}
	for _, s := range specs {
		if s.Exec == binary {
			continue
		}
		st.Previous = append(st.Previous, Replaced{Name: s.Name, Exec: s.Exec})
		if err := writeState(fs, st); err != nil {
			return err
		}
		start := time.Now()
		s.Exec = binary
		if err := daemon.NewClient(fs).ReplaceSpec(ctx, s, timeout); err != nil {
			return fmt.Errorf("%s did not come back from %s: %w; `kubeboot upgrade rollback` puts back what was replaced", s.Name, binary, err)
		}
		logf("[upgrade] %s runs from %s, ready in %s", s.Name, binary, time.Since(start).Round(time.Millisecond))
	}
	st.Done = true
	if err := writeState(fs, st); err != nil {
		return err
	}
	// A node made before records were gets its record here, from its
	// specs (component.Store.Node).
	rec.Version, rec.Kubeboot = st.To, st.Kubeboot
	return nodestate.Write(fs, rec)
}

// Rollback puts back, in reverse order, what the last upgrade replaced.
func Rollback(ctx context.Context, fs fsys.FS, timeout time.Duration, logf func(string, ...any)) (*State, error) {
	st, err := ReadState(fs)
	if err != nil {
		return nil, err
	}
	if st == nil || len(st.Previous) == 0 {
		return nil, fmt.Errorf("no upgrade to roll back on this node (%s)", fs.Path(StateFile))
	}
	specs, err := (component.Store{FS: fs}).Load()
	if err != nil {
		return nil, err
	}
	byName := map[string]component.Spec{}
	for _, s := range specs {
		byName[s.Name] = s
	}
	for i := len(st.Previous) - 1; i >= 0; i-- {
		r := st.Previous[i]
		s, ok := byName[r.Name]
		if !ok {
			continue
		}
		start := time.Now()
		s.Exec = r.Exec
		if err := daemon.NewClient(fs).ReplaceSpec(ctx, s, timeout); err != nil {
			return nil, fmt.Errorf("rolling back %s: %w", r.Name, err)
		}
		from := r.Exec
		if from == "" {
			from = "the node daemon's binary"
		}
		logf("[upgrade] %s runs from %s again, ready in %s", r.Name, from, time.Since(start).Round(time.Millisecond))
	}
	if rec, err := (component.Store{FS: fs}).Node(); err == nil && !rec.Legacy {
		rec.Version, rec.Kubeboot = st.NodeVersion, st.NodeKubeboot
		if err := nodestate.Write(fs, rec); err != nil {
			return nil, err
		}
	}
	// Kept for the record; a second rollback finds nothing to do.
	if err := writeStateTo(fs, StateFile+".rolled-back", st); err != nil {
		return nil, err
	}
	return st, os.Remove(fs.Path(StateFile))
}
