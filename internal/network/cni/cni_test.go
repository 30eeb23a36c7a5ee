package cni

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
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

func TestByFamily(t *testing.T) {
	for _, tc := range []struct {
		list    []string
		cidrs   bool
		v4, v6  string
		wantErr bool
	}{
		{[]string{"10.0.0.1"}, false, "10.0.0.1", "", false},
		{[]string{"fd00::1", " 10.0.0.1 ", "10.0.0.2", "fd00::2"}, false, "10.0.0.1", "fd00::1", false},
		{[]string{"", "fd00:0::1"}, false, "", "fd00::1", false},
		{nil, false, "", "", false},
		// What parses is kept; the first error is named.
		{[]string{"nonsense", "10.0.0.1"}, false, "10.0.0.1", "", true},
		{[]string{"10.0.0.0/24"}, false, "", "", true},
		// CIDRs in canonical form, as flannel's lease writes them.
		{[]string{"fd00:10:244:3::1/64", "10.244.3.7/24", "10.244.4.0/24"}, true, "10.244.3.0/24", "fd00:10:244:3::/64", false},
		{[]string{"10.244.0.0"}, true, "", "", true},
	} {
		f := AddrsByFamily
		if tc.cidrs {
			f = CIDRsByFamily
		}
		v4, v6, err := f(tc.list)
		if v4 != tc.v4 || v6 != tc.v6 || (err != nil) != tc.wantErr {
			t.Errorf("(CIDRs %v) %q: %q, %q, %v; want %q, %q, error %v", tc.cidrs, tc.list, v4, v6, err, tc.v4, tc.v6, tc.wantErr)
		}
	}
	if got := Ordered("", "fd00::/64"); !slices.Equal(got, []string{"fd00::/64"}) {
		t.Errorf("Ordered: %v", got)
	}
	if got := Ordered("10.0.0.0/24", "fd00::/64"); !slices.Equal(got, []string{"10.0.0.0/24", "fd00::/64"}) {
		t.Errorf("Ordered: %v", got)
	}
}

func TestPodMTU(t *testing.T) {
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Skipf("no loopback interface: %v", err)
	}
	if got := PodMTU("127.0.0.1", 50); got != lo.MTU-50 {
		t.Errorf("PodMTU(127.0.0.1, 50) = %d, want %d", got, lo.MTU-50)
	}
	if got := PodMTU("192.0.2.1", 50); got != 0 {
		t.Errorf("an address no interface holds: %d, want 0", got)
	}
}
