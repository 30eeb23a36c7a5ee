package node

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseResolvConf(t *testing.T) {
	r := ParseResolvConf("x", []byte("# comment\nnameserver 127.0.0.53\nnameserver 10.0.0.2\nnameserver ::1\nnameserver 0.0.0.0\nnameserver fd00::1\nsearch example.com\noptions ndots:2 edns0\n"))
	if !slices.Equal(r.Nameservers, []string{"10.0.0.2", "fd00::1"}) || !slices.Equal(r.Loopback, []string{"127.0.0.53", "::1", "0.0.0.0"}) {
		t.Errorf("nameservers %v, loopback %v", r.Nameservers, r.Loopback)
	}
	f := string(r.Filtered())
	for _, want := range []string{"nameserver 10.0.0.2\n", "nameserver fd00::1\n", "search example.com\n", "options ndots:2 edns0\n"} {
		if !strings.Contains(f, want) {
			t.Errorf("filtered copy lacks %q:\n%s", want, f)
		}
	}
	if strings.Contains(f, "nameserver 127.") || strings.Contains(f, "nameserver ::1") {
		t.Errorf("filtered copy keeps a loopback server:\n%s", f)
	}
}

func TestDetectHostDNS(t *testing.T) {
	ptr := func(s string) *string { return &s }
	cases := []struct {
		name          string
		etc, resolved string // file contents; "" means absent
		configured    *string
		wantKubelet   string // "etc", "resolved", "pod", "configured" or a literal
		wantWrite     []string
		wantWarning   bool
		wantErr       string
		wantNote      bool
	}{
		{name: "plain host", etc: "nameserver 10.0.0.1\n", wantKubelet: "etc"},
		{name: "systemd-resolved, as kubeadm", etc: "nameserver 127.0.0.53\nsearch lan\n", resolved: "nameserver 10.0.0.2\n", wantKubelet: "resolved"},
		{name: "dnsmasq only", etc: "nameserver 127.0.0.1\nsearch lan\n", wantKubelet: "pod", wantWrite: []string{"search lan"}, wantWarning: true},
		{name: "local and remote", etc: "nameserver 127.0.0.1\nnameserver 10.0.0.3\n", wantKubelet: "pod", wantWrite: []string{"nameserver 10.0.0.3"}},
		{name: "no resolv.conf", wantKubelet: "pod"},
		{name: "configured", etc: "nameserver 127.0.0.1\n", configured: ptr("CONF"), wantKubelet: "configured"},
		{name: "configured loopback refused", configured: ptr("LOOP"), wantErr: "loopback"},
		{name: "configured elsewhere", etc: "nameserver 10.0.0.1\n", configured: ptr("/nonexistent/resolv.conf"), wantKubelet: "etc", wantNote: true},
		{name: "configured empty", configured: ptr(""), wantKubelet: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			oldEtc, oldResolved := HostResolvConf, SystemdResolvedUpstream
			defer func() { HostResolvConf, SystemdResolvedUpstream = oldEtc, oldResolved }()
			HostResolvConf, SystemdResolvedUpstream = filepath.Join(dir, "etc-resolv.conf"), filepath.Join(dir, "resolved.conf")
			if tc.etc != "" {
				os.WriteFile(HostResolvConf, []byte(tc.etc), 0o644)
			}
			if tc.resolved != "" {
				os.WriteFile(SystemdResolvedUpstream, []byte(tc.resolved), 0o644)
			}
			conf, loop := filepath.Join(dir, "conf"), filepath.Join(dir, "loop")
			os.WriteFile(conf, []byte("nameserver 10.9.9.9\n"), 0o644)
			os.WriteFile(loop, []byte("nameserver 127.0.0.1\n"), 0o644)
			configured := tc.configured
			if configured != nil {
				v := strings.NewReplacer("CONF", conf, "LOOP", loop).Replace(*configured)
				configured = &v
			}
			h, err := DetectHostDNS(configured)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error about %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"etc": HostResolvConf, "resolved": SystemdResolvedUpstream, "pod": PodResolvConf, "configured": conf}[tc.wantKubelet]
			if want == "" {
				want = tc.wantKubelet
			}
			if h.KubeletResolvConf != want {
				t.Errorf("kubelet resolvConf %q, want %q", h.KubeletResolvConf, want)
			}
			for _, w := range tc.wantWrite {
				if !strings.Contains(string(h.Write), w) {
					t.Errorf("written resolv.conf lacks %q:\n%s", w, h.Write)
				}
			}
			if strings.Contains(string(h.Write), "nameserver 127.") {
				t.Errorf("written resolv.conf names a loopback server:\n%s", h.Write)
			}
			if (h.Warning() != "") != tc.wantWarning {
				t.Errorf("warning %q", h.Warning())
			}
			if (h.Note != "") != tc.wantNote {
				t.Errorf("note %q", h.Note)
			}
		})
	}
}

func TestDNSUpstream(t *testing.T) {
	ptr := func(s string) *string { return &s }
	dir := t.TempDir()
	good, loop := filepath.Join(dir, "good"), filepath.Join(dir, "loop")
	os.WriteFile(good, []byte("nameserver 10.1.1.1\nnameserver 10.1.1.2\n"), 0o644)
	os.WriteFile(loop, []byte("nameserver 127.0.0.53\n"), 0o644)
	usable := HostDNS{Source: ResolvConf{Path: "/etc/resolv.conf", Nameservers: []string{"10.0.0.1"}}}
	local := HostDNS{Source: ResolvConf{Path: "/etc/resolv.conf", Loopback: []string{"127.0.0.1"}}}
	cases := []struct {
		name        string
		explicit    *string
		host        HostDNS
		forward     string
		wantWarning bool
		wantErr     string
	}{
		{name: "default, usable host", host: usable, forward: "/etc/resolv.conf"},
		{name: "default, local resolver only", host: local, forward: "", wantWarning: true},
		{name: "explicit nowhere", explicit: ptr(""), host: local},
		{name: "explicit addresses", explicit: ptr("1.1.1.1, 8.8.8.8:53"), host: local, forward: "1.1.1.1 8.8.8.8:53"},
		{name: "explicit file", explicit: ptr(good), host: local, forward: "10.1.1.1 10.1.1.2"},
		{name: "loopback address refused", explicit: ptr("127.0.0.53"), wantErr: "loopback"},
		{name: "loopback file refused", explicit: ptr(loop), wantErr: "loopback"},
		{name: "not an address", explicit: ptr("dns.example.com"), wantErr: "neither an IP address"},
		{name: "missing file", explicit: ptr("/nonexistent"), wantErr: "no such file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up, err := DNSUpstream(tc.explicit, tc.host)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error about %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if up.Forward != tc.forward || (up.Warning != "") != tc.wantWarning {
				t.Errorf("forward %q warning %q", up.Forward, up.Warning)
			}
		})
	}
}
