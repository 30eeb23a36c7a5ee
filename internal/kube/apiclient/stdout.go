package apiclient

import (
	"io"
	"os"
	"sync"
)

var stdoutMu sync.Mutex

// KubeadmPrintsTo runs f, whose kubeadm functions print their log lines
// with fmt.Println, with those lines going to w: the caller's output
// writer rather than the process's standard output, which a program that
// imports kubeboot's API owns. os.Stdout is process-wide, so while f runs
// whatever else the process prints goes to w as well; calls are
// serialized. When w is os.Stdout, f just runs.
func KubeadmPrintsTo(w io.Writer, f func() error) error {
	if w == os.Stdout {
		return f()
	}
	stdoutMu.Lock()
	defer stdoutMu.Unlock()
	r, pw, err := os.Pipe()
	if err != nil {
		return f()
	}
	copied := make(chan struct{})
	go func() {
		io.Copy(w, r) //nolint:errcheck // the lines are a log
		r.Close()
		close(copied)
	}()
	saved := os.Stdout
	os.Stdout = pw
	defer func() {
		os.Stdout = saved
		pw.Close()
		<-copied
	}()
	return f()
}
