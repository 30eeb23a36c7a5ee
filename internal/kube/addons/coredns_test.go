package addons

import (
	"strings"
	"testing"
)

func TestCorefile(t *testing.T) {
	for _, tc := range []struct {
		upstream string
		want     []string
		not      []string
	}{
		{upstream: "/etc/resolv.conf", want: []string{"forward . /etc/resolv.conf", "loop", "kubernetes cluster.local in-addr.arpa ip6.arpa"}},
		{upstream: "10.0.0.1 10.0.0.2", want: []string{"forward . 10.0.0.1 10.0.0.2"}},
		// Without an upstream nothing can loop: no forward, no loop plugin.
		{upstream: "", want: []string{"kubernetes cluster.local", "cache 30"}, not: []string{"forward", "loop"}},
	} {
		c := Corefile(DNSOptions{Domain: "cluster.local", Upstream: tc.upstream})
		for _, w := range tc.want {
			if !strings.Contains(c, w) {
				t.Errorf("upstream %q: Corefile lacks %q:\n%s", tc.upstream, w, c)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(c, n) {
				t.Errorf("upstream %q: Corefile has %q:\n%s", tc.upstream, n, c)
			}
		}
	}
}
