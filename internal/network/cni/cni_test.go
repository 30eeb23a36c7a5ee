package cni

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestConfList(t *testing.T) {
	b, err := ConfList(Conf{Network: "n", Bridge: "cni0", Subnets: []string{"10.244.1.0/24", "fd00:10:244:1::/64"}, MTU: 1350, DataDir: "/d"})
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Name    string `json:"name"`
		Plugins []struct {
			Type string `json:"type"`
			MTU  int    `json:"mtu"`
			IPAM struct {
				Ranges [][]map[string]string `json:"ranges"`
				Routes []map[string]string   `json:"routes"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	br := c.Plugins[0]
	if br.Type != "bridge" || br.MTU != 1350 || len(br.IPAM.Ranges) != 2 || br.IPAM.Ranges[1][0]["subnet"] != "fd00:10:244:1::/64" {
		t.Errorf("bridge %+v", br)
	}
	if len(br.IPAM.Routes) != 2 || br.IPAM.Routes[0]["dst"] != "0.0.0.0/0" || br.IPAM.Routes[1]["dst"] != "::/0" {
		t.Errorf("routes %v: one default route per family", br.IPAM.Routes)
	}
	if _, err := ConfList(Conf{Subnets: []string{"10.244.1.0"}}); err == nil {
		t.Error("a subnet without a prefix length: no error")
	}
	if _, err := ConfList(Conf{}); err == nil {
		t.Error("no subnet: no error")
	}
}

func TestWriteOnlyWhatChanged(t *testing.T) {
	f := filepath.Join(t.TempDir(), "net.d", "10.conflist")
	if wrote, err := Write(f, []byte("a")); err != nil || !wrote {
		t.Fatalf("first write: %v %v", wrote, err)
	}
	if wrote, err := Write(f, []byte("a")); err != nil || wrote {
		t.Fatalf("same content written again: %v %v", wrote, err)
	}
	if wrote, _ := Write(f, []byte("b")); !wrote {
		t.Fatal("new content not written")
	}
	if b, _ := os.ReadFile(f); string(b) != "b" {
		t.Fatalf("file holds %q", b)
	}
	if _, err := os.Stat(f + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left: %v", err)
	}
}
