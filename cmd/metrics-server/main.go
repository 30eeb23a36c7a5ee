// Command metrics-server is the only file of kubeboot's metrics-server
// image: upstream metrics-server (sigs.k8s.io/metrics-server, pinned in
// go.mod), its command as upstream's main builds it, built against the
// Kubernetes libraries of kubeboot's pinned version.
//
// One thing differs, and only in how the program is put together: since
// Kubernetes 1.35 every API type names its OpenAPI model itself
// (OpenAPIModelName: "io.k8s.metrics.pkg.apis.metrics.v1beta1.NodeMetrics"),
// and the API server library looks models up by that name, while the
// definitions metrics-server generated for its release key them by Go
// package path ("k8s.io/metrics/pkg/apis/metrics/v1beta1.NodeMetrics").
// Built as is, it panics at start ("cannot find model definition").
// Definitions keys them as the library looks them up; nothing else of
// upstream's command changes.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/spf13/cobra"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/pkg/version"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/logs"
	"k8s.io/component-base/term"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"
	generatedopenapi "sigs.k8s.io/metrics-server/pkg/api/generated/openapi"

	"sigs.k8s.io/metrics-server/cmd/metrics-server/app/options"
)

func main() {
	logs.InitLogs()
	defer logs.FlushLogs()
	if len(os.Getenv("GOMAXPROCS")) == 0 {
		runtime.GOMAXPROCS(runtime.NumCPU())
	}
	if err := command(genericapiserver.SetupSignalHandler()).Execute(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// command is upstream's app.NewMetricsServerCommand at the pinned
// version, running run.
func command(stopCh <-chan struct{}) *cobra.Command {
	opts := options.NewOptions()
	cmd := &cobra.Command{
		Short: "Launch metrics-server",
		Long:  "Launch metrics-server",
		RunE:  func(*cobra.Command, []string) error { return run(opts, stopCh) },
	}
	fs := cmd.Flags()
	nfs := opts.Flags()
	for _, f := range nfs.FlagSets {
		fs.AddFlagSet(f)
	}
	local := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	logs.AddGoFlags(local)
	nfs.FlagSet("logging").AddGoFlagSet(local)
	usageFmt := "Usage:\n  %s\n"
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cmd.SetUsageFunc(func(cmd *cobra.Command) error {
		fmt.Fprintf(cmd.OutOrStderr(), usageFmt, cmd.UseLine())
		cliflag.PrintSections(cmd.OutOrStderr(), nfs, cols)
		return nil
	})
	cmd.SetHelpFunc(func(cmd *cobra.Command, _ []string) {
		fmt.Fprintf(cmd.OutOrStdout(), "%s\n\n"+usageFmt, cmd.Long, cmd.UseLine())
		cliflag.PrintSections(cmd.OutOrStdout(), nfs, cols)
	})
	fs.AddGoFlagSet(local)
	return cmd
}

// run is upstream's runCommand, with the OpenAPI definitions keyed by
// model name.
func run(o *options.Options, stopCh <-chan struct{}) error {
	if o.ShowVersion {
		fmt.Println(version.Get().GitVersion)
		return nil
	}
	if errs := o.Validate(); len(errs) > 0 {
		return errs[0]
	}
	config, err := o.ServerConfig()
	if err != nil {
		return err
	}
	useModelNames(config.Apiserver)
	s, err := config.Complete()
	if err != nil {
		return err
	}
	return s.RunUntil(stopCh)
}

// useModelNames makes the API server of c build its OpenAPI models from
// Definitions.
func useModelNames(c *genericapiserver.Config) {
	c.OpenAPIConfig.GetDefinitions = Definitions
	v3 := c.OpenAPIV3Config
	v3.GetDefinitions = Definitions
	// As genericapiserver.DefaultOpenAPIV3Config computes them.
	v3.Definitions = Definitions(func(name string) spec.Ref {
		defName, _ := v3.GetDefinitionName(name)
		return spec.MustCreateRef("#/components/schemas/" + common.EscapeJsonPointer(defName))
	})
}

// Definitions are metrics-server's generated OpenAPI definitions, each
// keyed, and named where another refers to it, by its model name.
func Definitions(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	defs := generatedopenapi.GetOpenAPIDefinitions(func(name string) spec.Ref { return ref(ModelName(name)) })
	out := make(map[string]common.OpenAPIDefinition, len(defs))
	for name, def := range defs {
		deps := make([]string, len(def.Dependencies))
		for i, d := range def.Dependencies {
			deps[i] = ModelName(d)
		}
		def.Dependencies = deps
		out[ModelName(name)] = def
	}
	return out
}

// ModelName is the model name of the type a generated definition names
// by its Go package path: the path with its domain reversed, dotted, as
// the types' own OpenAPIModelName methods have it.
func ModelName(goName string) string {
	if !strings.Contains(goName, "/") {
		return goName
	}
	return util.ToRESTFriendlyName(goName)
}
