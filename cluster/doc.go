// Package cluster is kubeboot's lifecycle as a Go API: Init makes this
// host (or a root prefix of it) the first control plane of a new cluster,
// Join adds it to one, Reset takes it out and removes everything kubeboot
// made, Upgrade moves it to another kubeboot binary's components, Restore
// brings a cluster back from an etcd snapshot, and CreateToken admits
// another node. The kubeboot command is a thin layer
// over it: each command maps its flags onto these options, and the
// same phases run, with the same log lines, whichever way they are called.
//
// Every option has a useful zero value: Init with no Config makes the
// cluster `kubeboot init` would make with no flags. The node's components
// run under kubeboot's node daemon, started from a kubeboot binary
// (Runtime.Binary, by default the `kubeboot` on PATH), which carries them
// all: nothing is downloaded. A program that imports this package needs
// that binary on the machine and nothing else.
//
// The phases' log lines go to Node.Out. kubeadm's own functions print
// some of them to standard output; while they run, the process's
// os.Stdout is pointed at Node.Out.
//
// A control plane without root privileges, as `kubeboot dev up --mode
// control-plane` runs it (etcd, API server, controller-manager,
// scheduler under a directory of yours), is Init with ControlPlaneOnly:
// the envtest use case, with no binaries to fetch.
package cluster
