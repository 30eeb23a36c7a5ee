package manifests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
)

func TestParse(t *testing.T) {
	objs, err := Parse("a.yaml", []byte(`# only a comment
---
apiVersion: v1
kind: Namespace
metadata:
  name: team
---
# comments
# alone
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: one, namespace: team}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: two}
`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.GetKind()+"/"+o.GetName())
	}
	if want := []string{"Namespace/team", "ConfigMap/one", "ConfigMap/two"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}

	for _, tc := range []struct{ data, want string }{
		{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [\n", "b.yaml: line 9 (document 2): did not find expected node content"},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: a-\n", "without metadata.name"},
		{"kind: ConfigMap\nmetadata:\n  name: a\n", "b.yaml: document 1 (line 1)"},
	} {
		if _, err := Parse("b.yaml", []byte(tc.data)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error with %q", tc.data, err, tc.want)
		}
	}
}

func TestIsManifest(t *testing.T) {
	for name, want := range map[string]bool{"a.yaml": true, "b.yml": true, "c.json": true, ".a.yaml.swp": false, ".hidden.yaml": false, "a.yaml~": false, "README": false} {
		if IsManifest(name) != want {
			t.Errorf("IsManifest(%q) = %v", name, !want)
		}
	}
}

// fakeCluster holds objects by ref with their file annotation, and records
// Events.
type fakeCluster struct {
	objs    map[Ref]string
	applied []Ref
	events  []string
	// refuse makes Apply or Delete of objects of that name fail.
	refuse map[string]bool
}

func (c *fakeCluster) Apply(_ context.Context, o *unstructured.Unstructured) (Ref, error) {
	r := Ref{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Namespace: o.GetNamespace(), Name: o.GetName()}
	if r.Kind == "ConfigMap" && r.Namespace == "" {
		r.Namespace = "default"
	}
	if c.refuse[r.Name] {
		return r, fmt.Errorf("%s: refused", r)
	}
	c.objs[r] = o.GetAnnotations()[FileAnnotation]
	c.applied = append(c.applied, r)
	return r, nil
}

func (c *fakeCluster) Delete(_ context.Context, r Ref, file string) error {
	if c.refuse[r.Name] {
		return fmt.Errorf("%s: refused", r)
	}
	if c.objs[r] == file {
		delete(c.objs, r)
	}
	return nil
}

func (c *fakeCluster) Event(_ context.Context, warning bool, reason, msg string) error {
	c.events = append(c.events, reason)
	return nil
}

func (c *fakeCluster) has(t *testing.T, want ...string) {
	t.Helper()
	var got []string
	for r, f := range c.objs {
		got = append(got, r.Name+"@"+f)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("the cluster holds %v, want %v", got, want)
	}
}

func configMaps(names ...string) string {
	var docs []string
	for _, n := range names {
		docs = append(docs, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: "+n+"\n")
	}
	return strings.Join(docs, "---\n")
}

func TestApplier(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	fs := fsys.NewRoot(root)
	dir := fs.Path(Dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Unix(1000, 0)
	c := &fakeCluster{objs: map[Ref]string{}, refuse: map[string]bool{}}
	a := &Applier{FS: fs, Target: c, now: func() time.Time { return now }}
	sync := func() *State {
		t.Helper()
		if err := a.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		s, err := ReadState(fs)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	// Dropped in: applied, annotated with its file.
	write("app.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n---\n"+configMaps("a", "b"))
	write(".app.yaml.swp", "not yaml at all: [")
	write("notes.txt", "not a manifest")
	s := sync()
	c.has(t, "team@app.yaml", "a@app.yaml", "b@app.yaml")
	if len(s.Files) != 1 || s.Files[0].Name != "app.yaml" || s.Files[0].Error != "" || len(s.Files[0].Objects) != 3 {
		t.Fatalf("state %+v", s)
	}
	if c.applied[0].Kind != "Namespace" {
		t.Errorf("applied %v first, want the Namespace", c.applied[0])
	}

	// Unchanged: not applied again.
	n := len(c.applied)
	sync()
	if len(c.applied) != n {
		t.Fatalf("an unchanged file was applied again")
	}

	// Edited: b leaves the file and the cluster, c comes.
	write("app.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n---\n"+configMaps("a", "c"))
	sync()
	c.has(t, "team@app.yaml", "a@app.yaml", "c@app.yaml")

	// Broken: reported, nothing deleted, Warning Event.
	c.events = nil
	write("app.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [\n")
	s = sync()
	c.has(t, "team@app.yaml", "a@app.yaml", "c@app.yaml")
	if f := s.Files[0]; !strings.Contains(f.Error, "app.yaml: line 4 (document 1): did not find expected node content") || len(f.Objects) != 3 {
		t.Fatalf("state of a broken file: %+v", f)
	}
	if !slices.Equal(c.events, []string{"ManifestInvalid"}) {
		t.Fatalf("events %v", c.events)
	}
	sync() // retried later, not reported twice
	if len(c.events) != 1 {
		t.Fatalf("events %v", c.events)
	}

	// Fixed: applied, what it no longer holds deleted.
	write("app.yaml", configMaps("a"))
	s = sync()
	c.has(t, "a@app.yaml")
	if s.Files[0].Error != "" || s.Files[0].Applied.IsZero() {
		t.Fatalf("state %+v", s.Files[0])
	}

	// An object some other file (or someone) took over is not deleted.
	write("other.yaml", configMaps("shared"))
	sync()
	c.objs[Ref{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "shared"}] = "mine.yaml"

	// Deleted: its objects go, only its own.
	c.events = nil
	if err := os.Remove(filepath.Join(dir, "app.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "other.yaml")); err != nil {
		t.Fatal(err)
	}
	s = sync()
	c.has(t, "shared@mine.yaml")
	if len(s.Files) != 0 || !slices.Equal(c.events, []string{"ManifestDeleted", "ManifestDeleted"}) {
		t.Fatalf("state %+v, events %v", s, c.events)
	}

	// Refused by the cluster: retried with back-off until it applies.
	c.refuse["x"] = true
	write("x.yaml", configMaps("x"))
	s = sync()
	if !strings.Contains(s.Files[0].Error, "x.yaml: 1 of 1 objects not applied") {
		t.Fatalf("state %+v", s.Files[0])
	}
	n = len(c.applied)
	c.refuse["x"] = false
	sync()
	if len(c.applied) != n {
		t.Fatalf("retried before its back-off")
	}
	now = now.Add(3 * time.Second)
	if s = sync(); s.Files[0].Error != "" {
		t.Fatalf("not retried: %+v", s.Files[0])
	}
	c.has(t, "shared@mine.yaml", "x@x.yaml")

	// A deletion refused stays in the state, marked, until it succeeds.
	c.refuse["x"] = true
	if err := os.Remove(filepath.Join(dir, "x.yaml")); err != nil {
		t.Fatal(err)
	}
	if s = sync(); len(s.Files) != 1 || !s.Files[0].Deleted || s.Files[0].Error == "" {
		t.Fatalf("state %+v", s)
	}
	c.refuse["x"] = false
	now = now.Add(time.Minute)
	if s = sync(); len(s.Files) != 0 {
		t.Fatalf("state %+v", s)
	}
	c.has(t, "shared@mine.yaml")
}

// A restarted applier applies every file again (what was changed by hand
// comes back), and still knows what each file made before.
func TestApplierRestart(t *testing.T) {
	root := t.TempDir()
	fs := fsys.NewRoot(root)
	if err := os.MkdirAll(fs.Path(Dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fs.Path(Dir+"/a.yaml"), []byte(configMaps("a", "b")), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &fakeCluster{objs: map[Ref]string{}, refuse: map[string]bool{}}
	if err := (&Applier{FS: fs, Target: c}).Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	delete(c.objs, Ref{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "a"}) // by hand
	if err := os.WriteFile(fs.Path(Dir+"/a.yaml"), []byte(configMaps("a")), 0o644); err != nil {
		t.Fatal(err)
	}
	// Run makes one pass before it sees its context ended.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (&Applier{FS: fs, Target: c, Interval: time.Hour}).Run(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := ReadState(fs)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Files) != 1 || len(s.Files[0].Objects) != 1 {
		t.Fatalf("state after a restart %+v", s)
	}
	c.has(t, "a@a.yaml")
}

// ReadDir (init --manifests) reads the manifests of a directory, not its
// subdirectories or other files, and refuses one that does not parse or a
// directory without any.
func TestReadDir(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{"a.yaml": configMaps("a"), "b.json": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}`, "notes.txt": "x: ["} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := ReadDir(dir)
	if err != nil || len(got) != 2 || got[0].Name != "a.yaml" || got[1].Name != "b.json" {
		t.Fatalf("ReadDir: %+v, %v", got, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "c.yml"), []byte("kind: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadDir(dir); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "c.yml")+": line 1") {
		t.Fatalf("a broken file: %v", err)
	}
	if _, err := ReadDir(t.TempDir()); err == nil || !strings.Contains(err.Error(), "holds no manifest") {
		t.Fatalf("an empty directory: %v", err)
	}
}
