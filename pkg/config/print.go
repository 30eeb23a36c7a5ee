package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	kubeproxyv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"
)

// Marshal writes the documents the configuration has as one multi-document
// YAML stream, each with its apiVersion and kind, in the order kubeadm
// prints them.
func (c *Config) Marshal() ([]byte, error) {
	var docs []any
	if c.Init != nil {
		c.Init.APIVersion, c.Init.Kind = kubeadmGV.String(), KindInit
		docs = append(docs, c.Init)
	}
	if c.Cluster != nil {
		c.Cluster.APIVersion, c.Cluster.Kind = kubeadmGV.String(), KindCluster
		docs = append(docs, c.Cluster)
	}
	if c.Join != nil {
		c.Join.APIVersion, c.Join.Kind = kubeadmGV.String(), KindJoin
		docs = append(docs, c.Join)
	}
	if c.Reset != nil {
		c.Reset.APIVersion, c.Reset.Kind = kubeadmGV.String(), KindReset
		docs = append(docs, c.Reset)
	}
	if c.Kubelet != nil {
		c.Kubelet.APIVersion, c.Kubelet.Kind = kubeletGV.String(), KindKubelet
		m, err := withoutZeroFields(c.Kubelet, &kubeletv1beta1.KubeletConfiguration{})
		if err != nil {
			return nil, err
		}
		docs = append(docs, m)
	}
	if c.KubeProxy != nil {
		c.KubeProxy.APIVersion, c.KubeProxy.Kind = kubeProxyGV.String(), KindKubeProxy
		m, err := withoutZeroFields(c.KubeProxy, &kubeproxyv1alpha1.KubeProxyConfiguration{})
		if err != nil {
			return nil, err
		}
		docs = append(docs, m)
	}
	var out bytes.Buffer
	for i, d := range docs {
		b, err := yaml.Marshal(d)
		if err != nil {
			return nil, fmt.Errorf("marshalling configuration: %w", err)
		}
		if i > 0 {
			out.WriteString("---\n")
		}
		out.Write(b)
	}
	return out.Bytes(), nil
}

// withoutZeroFields is a component configuration (passed through to the
// component, which defaults it) as a map holding only the fields that
// differ from the Go zero value: what the document set. Its non-pointer
// fields without omitempty would otherwise print as "0s", "" and {}.
func withoutZeroFields(doc, zero any) (map[string]any, error) {
	var m, z map[string]any
	for _, x := range []struct {
		from any
		to   *map[string]any
	}{{doc, &m}, {zero, &z}} {
		b, err := json.Marshal(x.from)
		if err != nil {
			return nil, fmt.Errorf("marshalling configuration: %w", err)
		}
		if err := json.Unmarshal(b, x.to); err != nil {
			return nil, err
		}
	}
	prune(m, z)
	return m, nil
}

func prune(m, zero map[string]any) {
	for k, v := range m {
		zv, ok := zero[k]
		if !ok {
			continue
		}
		if vm, isMap := v.(map[string]any); isMap {
			if zm, zIsMap := zv.(map[string]any); zIsMap {
				prune(vm, zm)
				if len(vm) == 0 {
					delete(m, k)
				}
				continue
			}
		}
		if reflect.DeepEqual(v, zv) {
			delete(m, k)
		}
	}
}
