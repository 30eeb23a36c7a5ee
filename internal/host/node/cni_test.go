package node

import (
	"slices"
	"testing"
)

func TestFirstNodeSubnets(t *testing.T) {
	for _, tc := range []struct {
		pods           string
		maskV4, maskV6 int
		want           []string
	}{
		{"10.244.0.0/16", 24, 64, []string{"10.244.0.0/24"}},
		{"10.244.0.0/16,fd00:10:244::/56", 24, 64, []string{"10.244.0.0/24", "fd00:10:244::/64"}},
		{"fd00:10:244::/56,10.244.0.0/16", 24, 64, []string{"10.244.0.0/24", "fd00:10:244::/64"}},
		{"fd00:10:244::/72", 24, 80, []string{"fd00:10:244::/80"}},
		// A pod network smaller than a node's subnet is the node's.
		{"10.244.0.0/25", 24, 64, []string{"10.244.0.0/25"}},
	} {
		got, err := FirstNodeSubnets(tc.pods, tc.maskV4, tc.maskV6)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("FirstNodeSubnets(%s, %d, %d) = %v (%v), want %v", tc.pods, tc.maskV4, tc.maskV6, got, err, tc.want)
		}
	}
}
