// Package pause is the pod sandbox's process: PID 1 of the pod's
// namespaces, doing nothing but reaping orphans and exiting on SIGINT or
// SIGTERM, as upstream's pause.c does.
package pause

import (
	"os"
	"os/signal"
	"syscall"
)

// Main runs until SIGINT or SIGTERM.
func Main() int {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			return 0
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
	return 0
}
