package component

import (
	"strings"
	"testing"
)

func TestOrder(t *testing.T) {
	specs := []Spec{{Name: "kube-scheduler", After: []string{"kube-apiserver"}}, {Name: "kube-apiserver", After: []string{"etcd"}}, {Name: "etcd"}, {Name: "kubelet", After: []string{"containerd"}}, {Name: "containerd"}}
	out, err := Order(specs)
	if err != nil {
		t.Fatal(err)
	}
	pos := map[string]int{}
	for i, s := range out {
		pos[s.Name] = i
	}
	for _, s := range specs {
		for _, d := range s.After {
			if pos[d] > pos[s.Name] {
				t.Errorf("%s comes before its dependency %s: %v", s.Name, d, out)
			}
		}
	}
	if _, err := Order([]Spec{{Name: "a", After: []string{"b"}}, {Name: "b", After: []string{"a"}}}); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("cycle not reported: %v", err)
	}
}

func TestArgsOverride(t *testing.T) {
	a := &Args{}
	a.Set("b", "1")
	a.Set("a", "2")
	a.Set("b", "3")
	if got := strings.Join(a.List(), " "); got != "--a=2 --b=3" {
		t.Errorf("got %q", got)
	}
}
