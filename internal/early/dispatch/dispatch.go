// Package dispatch runs one of a set of programs, chosen by argv[0] or by
// the first argument, and exits; it returns when os.Args names none.
package dispatch

import (
	"os"
	"path/filepath"
)

// Run runs the program os.Args names, if progs has it, and exits.
func Run(progs map[string]func(args []string) int) {
	if run, ok := progs[filepath.Base(os.Args[0])]; ok {
		os.Exit(run(os.Args[1:]))
	}
	if len(os.Args) > 1 {
		if run, ok := progs[os.Args[1]]; ok {
			os.Args = os.Args[1:]
			os.Exit(run(os.Args[1:]))
		}
	}
}
