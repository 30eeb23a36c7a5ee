// Package config owns kubeboot's configuration: kubeadm v1beta4 documents
// (InitConfiguration, ClusterConfiguration, JoinConfiguration,
// ResetConfiguration) plus pass-through KubeletConfiguration and
// KubeProxyConfiguration, read from one multi-document YAML file, defaulted,
// merged with command-line flags the way kubeadm does, and validated with
// errors that name the document, the field path and the rule.
package config

import (
	"bytes"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	kubeproxyv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/kubeboot/kubeboot/internal/base/yamldoc"
)

// The document kinds kubeboot reads.
const (
	KindInit      = "InitConfiguration"
	KindCluster   = "ClusterConfiguration"
	KindJoin      = "JoinConfiguration"
	KindReset     = "ResetConfiguration"
	KindKubelet   = "KubeletConfiguration"
	KindKubeProxy = "KubeProxyConfiguration"
)

var (
	kubeadmGV   = kubeadmv1.SchemeGroupVersion
	kubeletGV   = kubeletv1beta1.SchemeGroupVersion
	kubeProxyGV = kubeproxyv1alpha1.SchemeGroupVersion
)

// Config is one parsed configuration file. A nil field means the file had
// no document of that kind.
type Config struct {
	Init      *kubeadmv1.InitConfiguration
	Cluster   *kubeadmv1.ClusterConfiguration
	Join      *kubeadmv1.JoinConfiguration
	Reset     *kubeadmv1.ResetConfiguration
	Kubelet   *kubeletv1beta1.KubeletConfiguration
	KubeProxy *kubeproxyv1alpha1.KubeProxyConfiguration
	// Lifecycle is kubeboot's own, from flags: no document carries it.
	Lifecycle Lifecycle
	// PodNetwork is kubeboot's own too: init's flags, or what the cluster
	// stored for a joining node.
	PodNetwork PodNetwork
	// ControlPlaneOnly is kubeboot's own too (init without the node side):
	// the advertise address may then be a loopback one, as on a machine
	// whose only address is loopback (a CI container); kube-apiserver's
	// endpoint reconciler, which cannot store it, is then off.
	ControlPlaneOnly bool

	// Source names where the documents came from, for error messages.
	Source string
	// docs records where each kind was found, for error messages.
	docs map[string]docRef
}

// NeedInit refuses documents that hold neither an InitConfiguration nor a
// ClusterConfiguration: what init was given is meant for something else.
func (c *Config) NeedInit() error {
	if c.Init == nil && c.Cluster == nil {
		return &DocError{Source: c.Source, Err: fmt.Errorf("no InitConfiguration or ClusterConfiguration document: `init` needs at least one of them")}
	}
	return nil
}

// NeedJoin refuses documents without a JoinConfiguration.
func (c *Config) NeedJoin() error {
	if c.Join == nil {
		return &DocError{Source: c.Source, Err: fmt.Errorf("no JoinConfiguration document: `join` needs one")}
	}
	return nil
}

type docRef struct {
	index int // 1-based
	line  int // 1-based first line
}

// DocError is an error in one document of a configuration file.
type DocError struct {
	Source string
	Index  int    // 1-based document number, 0 when not known
	Line   int    // 1-based line of the document's start, 0 when not known
	Kind   string // empty when the kind could not be read
	Err    error
}

func (e *DocError) Error() string {
	var b strings.Builder
	b.WriteString(e.Source)
	if e.Index > 0 {
		fmt.Fprintf(&b, ": document %d", e.Index)
		switch {
		case e.Kind != "" && e.Line > 0:
			fmt.Fprintf(&b, " (%s, line %d)", e.Kind, e.Line)
		case e.Kind != "":
			fmt.Fprintf(&b, " (%s)", e.Kind)
		case e.Line > 0:
			fmt.Fprintf(&b, " (line %d)", e.Line)
		}
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *DocError) Unwrap() error { return e.Err }

type rawDoc struct {
	yamldoc.Doc
	index int // 1-based, among the documents that are not empty
}

// splitDocuments cuts a YAML stream into its documents, dropping those of
// comments and blank lines alone.
func splitDocuments(data []byte) []rawDoc {
	var docs []rawDoc
	for _, d := range yamldoc.Split(data) {
		if !d.Empty() {
			docs = append(docs, rawDoc{Doc: d, index: len(docs) + 1})
		}
	}
	return docs
}

// Parse reads a multi-document YAML configuration. It rejects malformed
// YAML, documents without apiVersion/kind, unknown kinds and apiVersions,
// unknown or duplicate fields and a kind given twice. It does not default
// or validate values; see Default* and Validate.
func Parse(source string, data []byte) (*Config, error) {
	c := &Config{Source: source, docs: map[string]docRef{}}
	docs := splitDocuments(data)
	if len(docs) == 0 {
		return nil, &DocError{Source: source, Err: fmt.Errorf("no configuration documents found")}
	}
	for _, d := range docs {
		if err := c.addDocument(d); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *Config) addDocument(d rawDoc) error {
	docErr := func(kind string, err error) error {
		return &DocError{Source: c.Source, Index: d.index, Line: d.Line, Kind: kind, Err: err}
	}
	js, err := yaml.YAMLToJSON(d.Data)
	if err != nil {
		return docErr("", fmt.Errorf("malformed YAML: %s", d.AbsoluteLines(err.Error())))
	}
	if bytes.HasPrefix(bytes.TrimSpace(js), []byte("[")) || !bytes.HasPrefix(bytes.TrimSpace(js), []byte("{")) {
		return docErr("", fmt.Errorf("malformed document: expected a mapping with apiVersion and kind"))
	}
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(js, &tm); err != nil {
		return docErr("", fmt.Errorf("malformed document: %w", err))
	}
	switch {
	case tm.APIVersion == "" && tm.Kind == "":
		return docErr("", fmt.Errorf("apiVersion: Required value, kind: Required value: every document must say what it is"))
	case tm.APIVersion == "":
		return docErr(tm.Kind, fmt.Errorf("apiVersion: Required value"))
	case tm.Kind == "":
		return docErr("", fmt.Errorf("kind: Required value"))
	}
	gv, err := schema.ParseGroupVersion(tm.APIVersion)
	if err != nil {
		return docErr(tm.Kind, fmt.Errorf("apiVersion: Invalid value: %q: %v", tm.APIVersion, err))
	}
	target, err := c.target(gv, tm.Kind)
	if err != nil {
		return docErr(tm.Kind, err)
	}
	if prev, dup := c.docs[tm.Kind]; dup {
		return docErr(tm.Kind, fmt.Errorf("kind %s given twice (first in document %d)", tm.Kind, prev.index))
	}
	strictErrs, err := kjson.UnmarshalStrict(js, target)
	if err != nil {
		return docErr(tm.Kind, fmt.Errorf("invalid value: %v", err))
	}
	if len(strictErrs) > 0 {
		msgs := make([]string, len(strictErrs))
		for i, e := range strictErrs {
			msgs[i] = e.Error()
		}
		return docErr(tm.Kind, fmt.Errorf("%s", strings.Join(msgs, "; ")))
	}
	c.docs[tm.Kind] = docRef{index: d.index, line: d.Line}
	return nil
}

// target allocates the object for a kind and returns a pointer to decode
// into, or an error naming what is supported.
func (c *Config) target(gv schema.GroupVersion, kind string) (any, error) {
	switch gv.Group {
	case kubeadmGV.Group:
		if gv.Version != kubeadmGV.Version {
			return nil, fmt.Errorf("apiVersion: Unsupported value: %q: kubeboot reads %s (kubeadm's v1beta4); convert older files with `kubeadm config migrate`", gv.String(), kubeadmGV)
		}
		switch kind {
		case KindInit:
			c.Init = &kubeadmv1.InitConfiguration{}
			return c.Init, nil
		case KindCluster:
			c.Cluster = &kubeadmv1.ClusterConfiguration{}
			return c.Cluster, nil
		case KindJoin:
			c.Join = &kubeadmv1.JoinConfiguration{}
			return c.Join, nil
		case KindReset:
			c.Reset = &kubeadmv1.ResetConfiguration{}
			return c.Reset, nil
		}
		return nil, fmt.Errorf("kind: Unsupported value: %q: supported kinds of %s are %s, %s, %s, %s", kind, kubeadmGV, KindInit, KindCluster, KindJoin, KindReset)
	case kubeletGV.Group:
		if gv.Version != kubeletGV.Version || kind != KindKubelet {
			return nil, fmt.Errorf("apiVersion/kind: Unsupported value: %s %s: kubeboot passes through %s %s", gv, kind, kubeletGV, KindKubelet)
		}
		c.Kubelet = &kubeletv1beta1.KubeletConfiguration{}
		return c.Kubelet, nil
	case kubeProxyGV.Group:
		if gv.Version != kubeProxyGV.Version || kind != KindKubeProxy {
			return nil, fmt.Errorf("apiVersion/kind: Unsupported value: %s %s: kubeboot passes through %s %s", gv, kind, kubeProxyGV, KindKubeProxy)
		}
		c.KubeProxy = &kubeproxyv1alpha1.KubeProxyConfiguration{}
		return c.KubeProxy, nil
	}
	return nil, fmt.Errorf("apiVersion: Unsupported value: %q: supported are %s, %s and %s", gv.String(), kubeadmGV, kubeletGV, kubeProxyGV)
}
