// Command kubeboot is the single binary: the bootstrapper and, dispatched
// by argv[0] or subcommand, the components it embeds.
package main

import (
	"os"

	"github.com/kubeboot/kubeboot/internal/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}
