package engine

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"testing"
)

func TestExitCodes(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	boom := errors.New("boom")
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		args   []string
		err    error
		code   int
		stderr string
	}{
		{name: "runs and ends", ctx: context.Background(), args: []string{"--node-name", "n1", "--v", "2"}, code: 0},
		{name: "an error", ctx: context.Background(), err: boom, code: 1, stderr: "flannel: boom\n"},
		{name: "an error after a signal", ctx: cancelled, err: boom, code: 0},
		{name: "flags that do not parse", ctx: context.Background(), args: []string{"--no-such-flag"}, code: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("flannel", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			node := fs.String("node-name", "", "")
			ran := false
			var stderr bytes.Buffer
			code := main(tc.ctx, &stderr, fs, tc.args, func(context.Context) error { ran = true; return tc.err })
			if code != tc.code || stderr.String() != tc.stderr {
				t.Fatalf("exit %d, stderr %q; want %d, %q", code, stderr.String(), tc.code, tc.stderr)
			}
			if ran != (tc.code != 2) {
				t.Fatalf("run called: %v with exit %d", ran, code)
			}
			if tc.code == 0 && len(tc.args) > 0 && *node != "n1" {
				t.Fatalf("--node-name %q, want n1", *node)
			}
		})
	}
}
