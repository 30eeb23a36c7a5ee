// Package manifests applies a control plane's manifests directory
// (/etc/kubernetes/kubeboot/manifests under the node's root) to the
// cluster, as k3s's deploy controller and k0s's manifest applier do: each
// YAML or JSON file there is applied with server-side apply under
// kubeboot's field manager, applied again when it changes, and the
// objects it made are deleted when they leave the file or the file is
// deleted, only those (each carries the name of its file, and the node
// keeps the list of what each file made). What happened to each file is
// kept in a state file that `kubeboot status` shows, and reported as
// Events on the node.
package manifests

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/base/yamldoc"
	"github.com/kubeboot/kubeboot/internal/host/node"
)

const (
	// Dir is the manifests directory of a control plane (a node path).
	Dir = node.ConfigDir + "/manifests"
	// StateFile is where the applier keeps what each file made and how
	// its last apply went (a node path).
	StateFile = node.StateDir + "/manifests/state.json"
	// FieldManager is the field manager of every apply.
	FieldManager = "kubeboot"
	// FileAnnotation on an object names the file of the directory it was
	// applied from; an object is deleted only while it still carries it.
	FileAnnotation = "manifests.kubeboot.io/file"
)

// Ref names one object the cluster holds.
type Ref struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

func (r Ref) String() string {
	if r.Namespace != "" {
		return fmt.Sprintf("%s %s/%s", r.Kind, r.Namespace, r.Name)
	}
	return r.Kind + " " + r.Name
}

// File is what the applier knows of one file of the directory.
type File struct {
	Name string `json:"name"`
	// Hash is the SHA-256 of the content last applied or tried.
	Hash string `json:"hash"`
	// Applied is when that content was last applied whole; zero until it
	// has been.
	Applied time.Time `json:"applied,omitzero"`
	// Objects are the objects applied from the file and not deleted
	// since.
	Objects []Ref `json:"objects,omitempty"`
	// Deleted is set once the file is gone while some of its objects
	// could not be deleted yet.
	Deleted bool `json:"deleted,omitempty"`
	// Error is why the last apply (or deletion) failed; empty when it
	// succeeded.
	Error string `json:"error,omitempty"`
	// Since is when the last apply or deletion ended.
	Since time.Time `json:"since"`
}

// State is the state file.
type State struct {
	Updated time.Time `json:"updated"`
	Files   []File    `json:"files"`
}

// ReadState reads the state file of the node under fs; no file is an
// empty state.
func ReadState(fs fsys.FS) (*State, error) {
	b, err := os.ReadFile(fs.Path(StateFile))
	if errors.Is(err, os.ErrNotExist) {
		return &State{}, nil
	}
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", fs.Path(StateFile), err)
	}
	return &s, nil
}

func writeState(fs fsys.FS, s *State) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(path.Dir(fs.Path(StateFile)), 0o700); err != nil {
		return err
	}
	return fsys.WriteFileAtomic(fs.Path(StateFile), append(b, '\n'), 0o600)
}

// IsManifest tells whether a file of the directory is applied: a visible
// .yaml, .yml or .json file (not an editor's backup or swap file).
func IsManifest(name string) bool {
	if strings.HasPrefix(name, ".") {
		return false
	}
	switch path.Ext(name) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// Source is one manifest file, read.
type Source struct {
	Name string
	Data []byte
}

// ReadDir reads the manifests of a directory (IsManifest; not its
// subdirectories) and checks that each parses.
func ReadDir(dir string) ([]Source, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []Source
	for _, e := range entries {
		if !IsManifest(e.Name()) || e.IsDir() {
			continue
		}
		b, err := os.ReadFile(path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		if _, err := Parse(path.Join(dir, e.Name()), b); err != nil {
			return nil, err
		}
		out = append(out, Source{Name: e.Name(), Data: b})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no manifest (.yaml, .yml or .json file)", dir)
	}
	return out, nil
}

// Parse decodes the documents of one file into objects, a List's items
// each on its own, with each error naming the file and the line.
func Parse(name string, data []byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for i, d := range yamldoc.Split(data) {
		fail := func(err error) error {
			// The YAML parser counts lines from the document's start.
			if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
				n, _ := strconv.Atoi(m[1])
				return fmt.Errorf("%s: line %d (document %d): %s", name, d.Line+n-1, i+1, strings.TrimPrefix(err.Error(), m[0]))
			}
			return fmt.Errorf("%s: document %d (line %d): %w", name, i+1, d.Line, err)
		}
		if d.Empty() {
			continue
		}
		j, err := yaml.YAMLToJSON(d.Data)
		if err != nil {
			return nil, fail(err)
		}
		if string(j) == "null" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(j); err != nil {
			return nil, fail(err)
		}
		objs := []*unstructured.Unstructured{u}
		if u.IsList() {
			l, err := u.ToList()
			if err != nil {
				return nil, fail(err)
			}
			objs = nil
			for i := range l.Items {
				objs = append(objs, &l.Items[i])
			}
		}
		for _, o := range objs {
			switch {
			case o.GetAPIVersion() == "" || o.GetKind() == "":
				return nil, fail(fmt.Errorf("an object without apiVersion or kind"))
			case o.GetName() == "":
				return nil, fail(fmt.Errorf("a %s without metadata.name (server-side apply needs one; generateName cannot be applied)", o.GetKind()))
			}
			out = append(out, o)
		}
	}
	return out, nil
}

var yamlLine = regexp.MustCompile(`^(?:error converting YAML to JSON: )?yaml: line (\d+): `)

// order puts Namespaces and CustomResourceDefinitions first (what the
// rest of a file may live in or be), the rest in the file's order.
func order(objs []*unstructured.Unstructured) {
	rank := func(o *unstructured.Unstructured) int {
		switch o.GetKind() {
		case "Namespace":
			return 0
		case "CustomResourceDefinition":
			return 1
		}
		return 2
	}
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int { return rank(a) - rank(b) })
}

func hashOf(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
