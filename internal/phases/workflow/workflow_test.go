package workflow

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

type data struct{ ran []string }

func rec(name string) func(context.Context, *data) error {
	return func(_ context.Context, d *data) error { d.ran = append(d.ran, name); return nil }
}

func tree() []Phase[*data] {
	return []Phase[*data]{
		{Name: "preflight", Run: rec("preflight")},
		{Name: "certs", Phases: []Phase[*data]{
			{Name: "ca", Run: rec("certs/ca")},
			{Name: "apiserver", Run: rec("certs/apiserver")},
		}},
		{Name: "etcd", Phases: []Phase[*data]{{Name: "local", Run: rec("etcd/local"), RunIf: func(d *data) bool { return !slices.Contains(d.ran, "no-etcd") }}}},
		{Name: "later", Pending: "needs issue 3"},
	}
}

func TestRunSelection(t *testing.T) {
	cases := []struct {
		name    string
		o       Options
		pre     []string
		want    []string
		wantErr string
		// reportsPending: the output must tell that "later" is not implemented.
		reportsPending bool
	}{
		{name: "selection of a leaf", o: Options{Only: "certs/apiserver"}, want: []string{"certs/apiserver"}},
		{name: "selection of a group", o: Options{Only: "certs"}, want: []string{"certs/ca", "certs/apiserver"}},
		{name: "skip a leaf and a group", o: Options{Skip: []string{"certs/ca", "etcd"}, DryRun: true}, want: []string{"preflight", "certs/apiserver"}},
		{name: "run-if false", o: Options{Only: "etcd"}, pre: []string{"no-etcd"}, want: []string{"no-etcd"}},
		{name: "pending phase reported in a whole run", o: Options{}, want: []string{"preflight", "certs/ca", "certs/apiserver", "etcd/local"}, reportsPending: true},
		{name: "pending phase asked for by name fails", o: Options{Only: "later"}, want: nil, wantErr: "not implemented yet: needs issue 3"},
		{name: "pending phase skipped", o: Options{Skip: []string{"later"}}, want: []string{"preflight", "certs/ca", "certs/apiserver", "etcd/local"}},
		{name: "dry-run reports pending", o: Options{DryRun: true}, want: []string{"preflight", "certs/ca", "certs/apiserver", "etcd/local"}, reportsPending: true},
		{name: "unknown phase", o: Options{Only: "cert"}, wantErr: `unknown phase "cert"`},
		{name: "unknown skip", o: Options{Skip: []string{"certs/nope"}}, wantErr: `--skip-phases: unknown phase "certs/nope"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &Runner[*data]{Phases: tree()}
			d := &data{ran: tc.pre}
			var out strings.Builder
			tc.o.Out = &out
			err := r.Run(context.Background(), d, tc.o)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if tc.want != nil && !slices.Equal(d.ran, tc.want) {
				t.Errorf("ran %v, want %v", d.ran, tc.want)
			}
			if tc.reportsPending && !strings.Contains(out.String(), "[later] Not implemented yet, nothing done: needs issue 3") {
				t.Errorf("dry run did not report the pending phase: %q", out.String())
			}
		})
	}
}

func TestErrorNamesPhase(t *testing.T) {
	r := &Runner[*data]{Phases: []Phase[*data]{{Name: "a", Phases: []Phase[*data]{{Name: "b", Run: func(context.Context, *data) error { return errors.New("boom") }}}}}}
	err := r.Run(context.Background(), &data{}, Options{})
	if err == nil || err.Error() != "error execution phase a/b: boom" {
		t.Fatalf("got %v", err)
	}
	r = &Runner[*data]{Phases: []Phase[*data]{{Name: "p", Pending: "x"}}}
	if err := r.Run(context.Background(), &data{}, Options{Only: "p"}); !errors.Is(err, ErrNotImplemented) {
		t.Fatalf("pending phase error %v does not wrap ErrNotImplemented", err)
	}
}

func TestHelpAndCommands(t *testing.T) {
	r := &Runner[*data]{Phases: tree()}
	h := r.Help("init")
	for _, want := range []string{"preflight", "  /ca", "later", "(not implemented yet)"} {
		if !strings.Contains(h, want) {
			t.Errorf("help lacks %q:\n%s", want, h)
		}
	}
	d := &data{}
	cmd := &cobra.Command{Use: "init"}
	r.BindToCommand(cmd, func(_ *cobra.Command) func(context.Context, []string, Selection) error {
		return func(ctx context.Context, _ []string, sel Selection) error {
			return r.Run(ctx, d, Options{Only: sel.Only, Skip: sel.Skip})
		}
	})
	if !strings.Contains(cmd.Long, "  /ca") {
		t.Errorf("the command's help lacks the phases:\n%s", cmd.Long)
	}
	cmd.SetArgs([]string{"--skip-phases", "certs/ca,later"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(d.ran, "certs/apiserver") || slices.Contains(d.ran, "certs/ca") {
		t.Errorf("--skip-phases certs/ca ran %v", d.ran)
	}
	d.ran = nil
	cmd.SetArgs([]string{"phase", "certs", "all"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.ran, []string{"certs/ca", "certs/apiserver"}) {
		t.Errorf("`phase certs all` ran %v", d.ran)
	}
	d.ran = nil
	cmd.SetArgs([]string{"phase", "certs", "apiserver"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.ran, []string{"certs/apiserver"}) {
		t.Errorf("`phase certs apiserver` ran %v", d.ran)
	}
}
