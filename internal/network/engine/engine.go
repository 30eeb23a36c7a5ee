// Package engine is the command-line frame the pod network's engines
// (packages flannel and kuberouter) share: klog's flags beside theirs,
// SIGINT and SIGTERM as the end of the run, an error said under the
// engine's name and turned into an exit code.
package engine

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"
)

// Main parses args (without the program name) into fs, with klog's flags
// added, and runs run until it returns or a SIGINT or SIGTERM cancels its
// context. run must read the options fs fills after the parse: a method
// value on a pointer (o.run with func (o *opts) run), not on a copy made
// when Main is called (func (o opts) run), which keeps their defaults.
// It returns the exit code: 2 for flags that do not parse, 1 for an error
// run returns before a signal (said on stderr as "<fs's name>: <error>"),
// 0 otherwise.
func Main(fs *flag.FlagSet, args []string, run func(context.Context) error) int {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	return main(ctx, os.Stderr, fs, args, run)
}

func main(ctx context.Context, stderr io.Writer, fs *flag.FlagSet, args []string, run func(context.Context) error) int {
	klog.InitFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := run(ctx); err != nil && ctx.Err() == nil {
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return 1
	}
	return 0
}
