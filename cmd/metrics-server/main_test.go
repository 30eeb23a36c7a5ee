package main

import (
	"fmt"
	"strings"
	"testing"

	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/kube-openapi/pkg/builder3"
	generatedopenapi "sigs.k8s.io/metrics-server/pkg/api/generated/openapi"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	"sigs.k8s.io/metrics-server/pkg/api"
)

// Every type metrics-server serves has its definition under the name the
// API server library looks it up by, and so has every definition another
// depends on: the lookup that made upstream's build panic at start.
func TestDefinitionsByModelName(t *testing.T) {
	defs := Definitions(func(name string) spec.Ref { return spec.MustCreateRef("#/definitions/" + name) })
	var types []runtime.Object
	for gvk := range api.Scheme.AllKnownTypes() {
		// The group's own kinds (not the meta kinds every group version
		// registers, like WatchEvent, of routes metrics-server lacks).
		if gvk.GroupVersion() == metricsv1beta1.SchemeGroupVersion && strings.Contains(gvk.Kind, "Metrics") {
			obj, err := api.Scheme.New(gvk)
			if err != nil {
				t.Fatal(err)
			}
			types = append(types, obj)
		}
	}
	if len(types) < 4 {
		t.Fatalf("the scheme knows %d types of %s, want NodeMetrics, PodMetrics and their lists", len(types), metricsv1beta1.GroupName)
	}
	// What the OpenAPI builder walks: each served type and what it
	// depends on.
	seen := map[string]bool{}
	var walk func(name, from string)
	walk = func(name, from string) {
		if seen[name] {
			return
		}
		seen[name] = true
		def, ok := defs[name]
		if !ok {
			t.Errorf("no definition under %q (%s)", name, from)
			return
		}
		for _, d := range def.Dependencies {
			walk(d, "a dependency of "+name)
		}
	}
	var names []string
	for _, obj := range types {
		names = append(names, util.GetCanonicalTypeName(obj))
		walk(util.GetCanonicalTypeName(obj), fmt.Sprintf("the model name of %T", obj))
	}

	// The call that panicked at start, on the configuration upstream's
	// options make, with useModelNames applied.
	c := &genericapiserver.Config{
		OpenAPIConfig:   genericapiserver.DefaultOpenAPIConfig(generatedopenapi.GetOpenAPIDefinitions, openapinamer.NewDefinitionNamer(api.Scheme)),
		OpenAPIV3Config: genericapiserver.DefaultOpenAPIV3Config(generatedopenapi.GetOpenAPIDefinitions, openapinamer.NewDefinitionNamer(api.Scheme)),
	}
	useModelNames(c)
	if _, err := builder3.BuildOpenAPIDefinitionsForResources(c.OpenAPIV3Config, names...); err != nil {
		t.Errorf("building the OpenAPI models of %v: %v", names, err)
	}
}
