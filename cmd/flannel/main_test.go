package main

import (
	"encoding/json"
	"testing"
)

func TestNetConf(t *testing.T) {
	b, err := netConf("10.244.0.0/16, fd00:10:244::/56", "vxlan")
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if c["Network"] != "10.244.0.0/16" || c["IPv6Network"] != "fd00:10:244::/56" || c["EnableIPv4"] != true || c["EnableIPv6"] != true {
		t.Errorf("dual-stack net-conf: %s", b)
	}
	b, _ = netConf("fd00:10:244::/56", "wireguard")
	c = map[string]any{}
	json.Unmarshal(b, &c)
	if c["EnableIPv4"] != false || c["EnableIPv6"] != true || c["Backend"].(map[string]any)["PersistentKeepaliveInterval"] != float64(25) {
		t.Errorf("IPv6-only wireguard net-conf: %s", b)
	}
	if _, err := netConf("10.244.0.0", "vxlan"); err == nil {
		t.Error("a subnet without a prefix length: no error")
	}
}

func TestWithMTU(t *testing.T) {
	b, err := withMTU([]byte(`{"Type":"vxlan","VNI":4}`), 1380)
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil || c["Type"] != "vxlan" || c["VNI"] != 4.0 || c["MTU"] != 1380.0 {
		t.Errorf("withMTU: %s (%v)", b, err)
	}
	if b, err := withMTU(nil, 1430); err != nil || string(b) != `{"MTU":1430}` {
		t.Errorf("withMTU(nil): %s (%v)", b, err)
	}
}
