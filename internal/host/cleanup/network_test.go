package cleanup

import (
	"net"
	"slices"
	"testing"
)

func TestIPSetsOfKubeRouter(t *testing.T) {
	got := IPSetsOfKubeRouter([]string{"KUBE-SRC-ABC", "my-set", "inet6:KUBE-DST-XYZ", "TMP-1", "KUBE-SVC-NOPE"})
	if want := []string{"KUBE-SRC-ABC", "inet6:KUBE-DST-XYZ", "TMP-1"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestInSubnet(t *testing.T) {
	_, pod, _ := net.ParseCIDR("10.244.0.0/16")
	for cidr, want := range map[string]bool{"10.244.3.0/24": true, "10.244.0.0/16": true, "10.0.0.0/8": false, "10.245.0.0/24": false} {
		_, n, _ := net.ParseCIDR(cidr)
		if inSubnet(n, pod) != want {
			t.Errorf("%s in %s: want %v", cidr, pod, want)
		}
	}
}
