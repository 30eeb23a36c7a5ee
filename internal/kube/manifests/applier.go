package manifests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
)

// Target is where the applier's objects go: the cluster (NewCluster).
type Target interface {
	// Apply applies obj with server-side apply under FieldManager and
	// returns what it made.
	Apply(ctx context.Context, obj *unstructured.Unstructured) (Ref, error)
	// Delete deletes ref if it still carries FileAnnotation naming file;
	// an object already gone, or no longer the file's, is no error.
	Delete(ctx context.Context, ref Ref, file string) error
	// Event reports what happened to a file, as an Event on the node.
	Event(ctx context.Context, warning bool, reason, message string) error
}

// Applier keeps the cluster at what the manifests directory of the node
// under FS says.
type Applier struct {
	FS     fsys.FS
	Target Target
	// Interval is how often the directory is read; 2 s when zero.
	Interval time.Duration
	Logf     func(format string, args ...any)

	files map[string]*File
	// retry is when a file whose apply failed is tried again, unchanged.
	retry map[string]time.Time
	fails map[string]int
	now   func() time.Time
}

// Run applies the directory every Interval until ctx ends. At its start
// it applies every file again, as k3s does on a restart: what was changed
// or deleted by hand in the meantime comes back.
func (a *Applier) Run(ctx context.Context) error {
	if err := a.load(); err != nil {
		return err
	}
	// Where the operator drops files, from the start.
	if err := os.MkdirAll(a.FS.Path(Dir), 0o700); err != nil {
		return err
	}
	for _, f := range a.files {
		f.Hash = "" // applied again
	}
	interval := a.Interval
	if interval <= 0 {
		interval = 2 * time.Second
	}
	for {
		if err := a.Sync(ctx); err != nil {
			a.logf("%v", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

func (a *Applier) load() error {
	a.files, a.retry, a.fails = map[string]*File{}, map[string]time.Time{}, map[string]int{}
	s, err := ReadState(a.FS)
	if err != nil {
		return err
	}
	for i := range s.Files {
		f := s.Files[i]
		a.files[f.Name] = &f
	}
	return nil
}

func (a *Applier) logf(format string, args ...any) {
	if a.Logf != nil {
		a.Logf(format, args...)
	}
}

func (a *Applier) clock() time.Time {
	if a.now != nil {
		return a.now()
	}
	return time.Now()
}

// Sync makes one pass over the directory: files new, changed or due for
// a retry are applied, deleted files' objects deleted; the state file is
// written when anything changed. Its error is only about the directory or
// the state file; what happens to each file goes into the state.
func (a *Applier) Sync(ctx context.Context) error {
	if a.files == nil {
		if err := a.load(); err != nil {
			return err
		}
	}
	entries, err := os.ReadDir(a.FS.Path(Dir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reading %s: %w", a.FS.Path(Dir), err)
	}
	changed := false
	present := map[string]bool{}
	for _, e := range entries {
		if !e.Type().IsRegular() || !IsManifest(e.Name()) {
			continue
		}
		name := e.Name()
		data, err := os.ReadFile(a.FS.Path(Dir + "/" + name))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // deleted since the listing
			}
			return err
		}
		present[name] = true
		f := a.files[name]
		hash := hashOf(data)
		if f != nil && f.Hash == hash && !f.Deleted && (f.Error == "" || a.clock().Before(a.retry[name])) {
			continue
		}
		if f == nil {
			f = &File{Name: name}
			a.files[name] = f
		}
		a.apply(ctx, f, hash, data)
		changed = true
	}
	for name, f := range a.files {
		if present[name] || ctx.Err() != nil {
			continue
		}
		if f.Deleted && f.Error != "" && a.clock().Before(a.retry[name]) {
			continue
		}
		if a.remove(ctx, f) {
			delete(a.files, name)
		}
		changed = true
	}
	if !changed {
		return nil
	}
	return writeState(a.FS, a.state())
}

func (a *Applier) state() *State {
	s := &State{Updated: a.clock()}
	for _, f := range a.files {
		s.Files = append(s.Files, *f)
	}
	sort.Slice(s.Files, func(i, j int) bool { return s.Files[i].Name < s.Files[j].Name })
	return s
}

// apply applies one file's content; once all of it applied, the objects
// it made before and no longer holds are deleted.
func (a *Applier) apply(ctx context.Context, f *File, hash string, data []byte) {
	changed := f.Hash != hash
	f.Hash, f.Deleted, f.Since = hash, false, a.clock()
	objs, err := Parse(f.Name, data)
	if err != nil {
		a.failed(ctx, f, "ManifestInvalid", err, changed)
		return
	}
	order(objs)
	var made []Ref
	var errs []error
	for _, o := range objs {
		ann := o.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[FileAnnotation] = f.Name
		o.SetAnnotations(ann)
		ref, err := a.Target.Apply(ctx, o)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		made = append(made, ref)
		if !slices.Contains(f.Objects, ref) {
			f.Objects = append(f.Objects, ref)
		}
	}
	if len(errs) > 0 {
		a.failed(ctx, f, "ManifestFailed", fmt.Errorf("%s: %d of %d objects not applied: %w", f.Name, len(errs), len(objs), errors.Join(errs...)), changed)
		return
	}
	// What the file no longer holds, newest first.
	var gone []Ref
	for _, r := range f.Objects {
		if !slices.Contains(made, r) {
			gone = append(gone, r)
		}
	}
	slices.Reverse(gone)
	left, err := a.deleteAll(ctx, f.Name, gone)
	f.Objects = append(made, left...)
	if err != nil {
		a.failed(ctx, f, "ManifestFailed", fmt.Errorf("%s: deleting what it no longer holds: %w", f.Name, err), changed)
		return
	}
	wasFailing := f.Error != ""
	f.Error, f.Applied = "", a.clock()
	delete(a.retry, f.Name)
	delete(a.fails, f.Name)
	msg := fmt.Sprintf("%s: applied %d objects", f.Name, len(made))
	if len(gone) > 0 {
		msg += fmt.Sprintf(", deleted %d it no longer holds (%s)", len(gone), refList(gone))
	}
	a.logf("%s", msg)
	if changed || wasFailing {
		a.event(ctx, false, "ManifestApplied", msg)
	}
}

// remove deletes the objects of a file that is gone; it reports whether
// all are.
func (a *Applier) remove(ctx context.Context, f *File) bool {
	objs := slices.Clone(f.Objects)
	slices.Reverse(objs)
	left, err := a.deleteAll(ctx, f.Name, objs)
	slices.Reverse(left)
	f.Objects, f.Deleted, f.Since = left, true, a.clock()
	if err != nil {
		a.failed(ctx, f, "ManifestFailed", fmt.Errorf("%s was deleted; deleting its objects: %w", f.Name, err), f.Error == "")
		return false
	}
	delete(a.retry, f.Name)
	delete(a.fails, f.Name)
	msg := fmt.Sprintf("%s was deleted: deleted its %d objects", f.Name, len(objs))
	if len(objs) > 0 {
		msg += " (" + refList(objs) + ")"
	}
	a.logf("%s", msg)
	a.event(ctx, false, "ManifestDeleted", msg)
	return true
}

// deleteAll deletes refs in order and returns those it could not.
func (a *Applier) deleteAll(ctx context.Context, file string, refs []Ref) ([]Ref, error) {
	var left []Ref
	var errs []error
	for _, r := range refs {
		if err := a.Target.Delete(ctx, r, file); err != nil {
			left = append(left, r)
			errs = append(errs, err)
		}
	}
	return left, errors.Join(errs...)
}

// failed records why a file's apply failed, reports it when it is news,
// and backs its retries off: 2 s, 4 s, … up to a minute.
func (a *Applier) failed(ctx context.Context, f *File, reason string, err error, changed bool) {
	msg := err.Error()
	news := changed || msg != f.Error
	f.Error = msg
	n := a.fails[f.Name]
	a.fails[f.Name] = n + 1
	a.retry[f.Name] = a.clock().Add(min(time.Minute, (2*time.Second)<<min(n, 5)))
	if news {
		a.logf("%s", msg)
		a.event(ctx, true, reason, msg)
	}
}

func (a *Applier) event(ctx context.Context, warning bool, reason, msg string) {
	if err := a.Target.Event(ctx, warning, reason, msg); err != nil {
		a.logf("recording the Event %s: %v", reason, err)
	}
}

func refList(refs []Ref) string {
	var s []string
	for _, r := range refs {
		s = append(s, r.String())
	}
	return strings.Join(s, ", ")
}
