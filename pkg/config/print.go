package config

import (
	"bytes"
	"fmt"

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
		docs = append(docs, c.Kubelet)
	}
	if c.KubeProxy != nil {
		c.KubeProxy.APIVersion, c.KubeProxy.Kind = kubeProxyGV.String(), KindKubeProxy
		docs = append(docs, c.KubeProxy)
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
