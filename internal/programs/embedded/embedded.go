// Package embedded runs the upstream components linked into the kubeboot
// binary, each through its own upstream entry point. kubeboot never
// re-implements a component: this file only maps a name to the function
// upstream's own main calls.
//
// It is imported by cmd/kubeboot alone, so that the rest of the tree (and
// `go test -short ./...`) does not compile the components.
package embedded

import (
	"context"
	"fmt"
	"os"

	_ "github.com/containerd/containerd/v2/cmd/containerd/builtins" // containerd's plugins, as its own main imports them
	containerd "github.com/containerd/containerd/v2/cmd/containerd/command"
	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format, as upstream's mains register it
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics, as upstream's mains register them
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric, as upstream's mains register it
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"

	_ "k8s.io/client-go/plugin/pkg/client/auth" // kubectl's client auth plugins

	"github.com/kubeboot/kubeboot/internal/programs/settle"
)

// Main runs a component with its arguments (without the program name) and
// returns its exit code. Components that exit on their own never return.
type Main func(args []string) int

// Components maps each embedded component's name to its entry point.
func Components() map[string]Main {
	m := map[string]Main{
		"containerd": settle.Main(func(args []string) int {
			if err := containerd.App().Run(context.Background(), append([]string{"containerd"}, args...)); err != nil {
				fmt.Fprintln(os.Stderr, "containerd:", err)
				return 1
			}
			return 0
		}),
		"etcd": settle.Main(func(args []string) int {
			os.Args = append([]string{"etcd"}, args...)
			etcdmain.Main(os.Args)
			return 0
		}),
		"kube-apiserver": settle.Main(func(args []string) int {
			cmd := apiserver.NewAPIServerCommand()
			cmd.SetArgs(args)
			return cli.Run(cmd)
		}),
		"kube-controller-manager": settle.Main(func(args []string) int {
			cmd := controllermanager.NewControllerManagerCommand()
			cmd.SetArgs(args)
			return cli.Run(cmd)
		}),
		"kube-scheduler": settle.Main(func(args []string) int {
			cmd := scheduler.NewSchedulerCommand()
			cmd.SetArgs(args)
			return cli.Run(cmd)
		}),
		"kubelet": settle.Main(func(args []string) int {
			cmd := kubelet.NewKubeletCommand(context.Background())
			cmd.SetArgs(args)
			return cli.Run(cmd)
		}),
		"kube-proxy": settle.Main(func(args []string) int {
			cmd := proxy.NewProxyCommand()
			cmd.SetArgs(args)
			return cli.Run(cmd)
		}),
		"kubectl": func(args []string) int {
			// kubectl reads os.Args for plugins and verbosity, as its own main does.
			os.Args = append([]string{"kubectl"}, args...)
			logs.GlogSetter(kubectlcmd.GetLogVerbosity(os.Args)) // nolint:errcheck
			cmd := kubectlcmd.NewDefaultKubectlCommand()
			if err := cli.RunNoErrOutput(cmd); err != nil {
				kubectlutil.CheckErr(err)
				return 1
			}
			return 0
		},
	}
	return m
}
