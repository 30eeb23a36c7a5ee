// Command kubeboot is the single binary: the bootstrapper and, dispatched
// by argv[0] or by subcommand, the upstream components it embeds
// (`kubeboot kubectl get pods`, or a link named kube-apiserver).
package main

import (
	"os"
	"path/filepath"

	// First: kubectl's catalogs load only in kubectl (see the package).
	_ "github.com/kubeboot/kubeboot/internal/programs/kubectli18n"

	"github.com/kubeboot/kubeboot/internal/cli"
	"github.com/kubeboot/kubeboot/internal/programs/embedded"
	"github.com/kubeboot/kubeboot/internal/runtime/supervisor"
)

func main() {
	components := embedded.Components()
	if run, ok := components[filepath.Base(os.Args[0])]; ok {
		// Started ahead of its dependencies (component.Spec.Prestart),
		// a component's process has its package initialisation behind it
		// here and waits for the daemon to let it go on.
		if !supervisor.WaitGate() {
			os.Exit(0)
		}
		os.Exit(run(os.Args[1:]))
	}
	if len(os.Args) > 1 && !cli.IsOwnSubcommand(os.Args[1:]) {
		if run, ok := components[os.Args[1]]; ok {
			os.Exit(run(os.Args[2:]))
		}
	}
	names := make([]string, 0, len(components))
	for n := range components {
		names = append(names, n)
	}
	os.Exit(cli.Run(os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, names))
}
