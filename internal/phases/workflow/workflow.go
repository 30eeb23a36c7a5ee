// Package workflow runs a tree of phases over typed run data. The tree is
// data: from it come the `<cmd> phase <name>` subcommands, --skip-phases,
// the help text and dry-run behaviour, so a phase is declared once.
package workflow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// Phase is one step of a workflow, or a group of sub-phases.
type Phase[D any] struct {
	Name  string
	Short string
	Long  string
	// Phases are run in order after Run (if any).
	Phases []Phase[D]
	// Run does the phase's own work.
	Run func(ctx context.Context, d D) error
	// RunIf, when set, decides at run time whether the phase (and its
	// sub-phases) runs.
	RunIf func(d D) bool
	// Pending, when set, says why the phase's work is not built yet. Asked
	// for by name, the phase fails with that reason; as part of a larger
	// run it is reported as not implemented and the run goes on.
	Pending string
}

// ErrNotImplemented is wrapped by the error a pending phase returns.
var ErrNotImplemented = errors.New("not implemented yet")

// Entry is a phase with its place in the tree.
type Entry[D any] struct {
	Phase[D]
	// Path is the phase's full name, "certs/apiserver".
	Path  string
	Depth int
}

// Flatten lists the tree depth-first, parents before children.
func Flatten[D any](phases []Phase[D]) []Entry[D] {
	var out []Entry[D]
	var walk func(ps []Phase[D], prefix string, depth int)
	walk = func(ps []Phase[D], prefix string, depth int) {
		for _, p := range ps {
			path := prefix + p.Name
			out = append(out, Entry[D]{Phase: p, Path: path, Depth: depth})
			walk(p.Phases, path+"/", depth+1)
		}
	}
	walk(phases, "", 0)
	return out
}

// Options select what a run does.
type Options struct {
	// Only restricts the run to one phase and its sub-phases ("certs",
	// "certs/apiserver"); empty runs everything.
	Only string
	// Skip lists phases to leave out, with their sub-phases.
	Skip []string
	// DryRun makes pending phases report instead of failing.
	DryRun bool
	// Out receives the runner's own lines.
	Out io.Writer
	// Done, when set, is called after each phase that ran, with its path.
	Done func(path string)
}

// Runner runs a phase tree.
type Runner[D any] struct {
	Phases []Phase[D]
	// Args checks the positional arguments of the generated phase
	// commands (join's API server endpoint); nil accepts none.
	Args cobra.PositionalArgs
}

// Paths lists every phase path, in order.
func (r *Runner[D]) Paths() []string {
	var out []string
	for _, e := range Flatten(r.Phases) {
		out = append(out, e.Path)
	}
	return out
}

func (r *Runner[D]) has(path string) bool {
	for _, p := range r.Paths() {
		if p == path {
			return true
		}
	}
	return false
}

// Validate checks that every named phase exists.
func (r *Runner[D]) Validate(o Options) error {
	if o.Only != "" && !r.has(o.Only) {
		return fmt.Errorf("unknown phase %q; phases are: %s", o.Only, strings.Join(r.Paths(), ", "))
	}
	for _, s := range o.Skip {
		if !r.has(s) {
			return fmt.Errorf("--skip-phases: unknown phase %q; phases are: %s", s, strings.Join(r.Paths(), ", "))
		}
	}
	return nil
}

// Skips reports whether the run leaves out the phase path, by itself or
// with a phase above it.
func (o Options) Skips(path string) bool {
	for _, s := range o.Skip {
		if within(path, s) {
			return true
		}
	}
	return false
}

// within reports whether path is p or below it.
func within(path, p string) bool {
	return path == p || strings.HasPrefix(path, p+"/")
}

// Run executes the selected phases in order. It returns the first error,
// wrapped with the phase's path.
func (r *Runner[D]) Run(ctx context.Context, d D, o Options) error {
	if err := r.Validate(o); err != nil {
		return err
	}
	skipped := map[string]bool{}
	for _, e := range Flatten(r.Phases) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if o.Only != "" && !within(e.Path, o.Only) && !within(o.Only, e.Path) {
			continue
		}
		parentSkipped := false
		for s := range skipped {
			if within(e.Path, s) {
				parentSkipped = true
			}
		}
		if parentSkipped {
			continue
		}
		if o.Skips(e.Path) || (e.RunIf != nil && !e.RunIf(d)) {
			skipped[e.Path] = true
			continue
		}
		// An ancestor of the selected phase only frames it: its own Run is
		// not part of the selection.
		if o.Only != "" && !within(e.Path, o.Only) {
			continue
		}
		if e.Pending != "" {
			if o.Only == e.Path {
				return fmt.Errorf("phase %q: %w: %s", e.Path, ErrNotImplemented, e.Pending)
			}
			if o.Out != nil {
				fmt.Fprintf(o.Out, "[%s] Not implemented yet, nothing done: %s\n", e.Path, e.Pending)
			}
			continue
		}
		if e.Run == nil {
			continue
		}
		if err := e.Run(ctx, d); err != nil {
			return fmt.Errorf("error execution phase %s: %w", e.Path, err)
		}
		if o.Done != nil {
			o.Done(e.Path)
		}
	}
	return nil
}

// Help renders the phase list for a command's long help, as kubeadm does.
func (r *Runner[D]) Help(cmd string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The %q command executes the following phases:\n```\n", cmd)
	for _, e := range Flatten(r.Phases) {
		name := e.Name
		if e.Depth > 0 {
			name = strings.Repeat("  ", e.Depth-1) + "  /" + e.Name
		}
		short := e.Short
		if e.Pending != "" {
			short += " (not implemented yet)"
		}
		fmt.Fprintf(&b, "%-32s %s\n", name, short)
	}
	b.WriteString("```")
	return b.String()
}
