package settle

import "testing"

func TestSettlePercent(t *testing.T) {
	env := func(kv ...string) func(string) (string, bool) {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	for _, c := range []struct {
		env  func(string) (string, bool)
		want int
		ok   bool
	}{
		{env(), settleGOGC, true},
		{env("GOGC", "200"), 0, false},
		{env("KUBEBOOT_SETTLE_GOGC", "25"), 25, true},
		{env("KUBEBOOT_SETTLE_GOGC", "off"), 0, false},
		{env("GOGC", "off", "KUBEBOOT_SETTLE_GOGC", "25"), 0, false},
	} {
		n, ok := settlePercent(c.env)
		if n != c.want || ok != c.ok {
			t.Errorf("settlePercent = %d, %v; want %d, %v", n, ok, c.want, c.ok)
		}
	}
}
