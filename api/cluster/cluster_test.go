package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubeboot/kubeboot/api/wire"
)

// fakeBinary writes a kubeboot binary that answers every request with
// script's output.
func fakeBinary(t *testing.T, script string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeboot")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestVersionRefused: a binary of another protocol version, and one
// without the API, are refused before any operation, naming both sides.
func TestVersionRefused(t *testing.T) {
	ctx := context.Background()
	other := fakeBinary(t, `cat >/dev/null; echo '{"apiVersion":"api.kubeboot.io/v2","binary":{"kubeboot":"v9.0.0","kubernetes":"v1.99.0","etcd":"4.0.0"},"error":{"message":"not spoken"}}'`)
	_, err := Init(ctx, InitOptions{Node: Node{Binary: other}, ControlPlaneOnly: true})
	var v *VersionError
	if !errors.As(err, &v) {
		t.Fatalf("got %v, want a VersionError", err)
	}
	for _, want := range []string{other, "api.kubeboot.io/v2", "v9.0.0", "v1.99.0", wire.APIVersion} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not name %s", err, want)
		}
	}
	old := fakeBinary(t, `echo 'error: unknown command "api" for "kubeboot"' >&2; exit 1`)
	if _, err := Version(ctx, Node{Binary: old}); !errors.As(err, &v) || v.Speaks != "" || !strings.Contains(err.Error(), "has no Go API") {
		t.Fatalf("a binary without the API: got %v", err)
	}
}

// TestConfigError: the binary's refusal of a document comes back typed,
// with the document, its line and kind, and the fields.
func TestConfigError(t *testing.T) {
	bin := fakeBinary(t, `read -r req
case "$req" in
*'"version"'*) echo '{"apiVersion":"`+wire.APIVersion+`","binary":{"kubeboot":"dev"}}' ;;
*) echo '{"apiVersion":"`+wire.APIVersion+`","binary":{"kubeboot":"dev"},"error":{"message":"config: document 2 (ClusterConfiguration, line 7): networking.podSubnet: Invalid value","document":2,"line":7,"kind":"ClusterConfiguration","fields":["networking.podSubnet"]}}' ;;
esac`)
	_, err := Init(context.Background(), InitOptions{Node: Node{Binary: bin}, Config: []byte("...")})
	var c *ConfigError
	if !errors.As(err, &c) {
		t.Fatalf("got %v, want a ConfigError", err)
	}
	if c.Document != 2 || c.Line != 7 || c.Kind != "ClusterConfiguration" || len(c.Fields) != 1 || c.Fields[0] != "networking.podSubnet" {
		t.Errorf("got %+v", c)
	}
}

// TestDurations: a part of a second counts as one (a 500 ms token must not
// become one that never expires), a negative duration is refused before
// the binary is asked.
func TestDurations(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want int64
	}{{0, 0}, {500 * time.Millisecond, 1}, {time.Second, 1}, {time.Hour, 3600}, {1500 * time.Millisecond, 2}} {
		if got, err := seconds("TTL", tc.d); err != nil || got != tc.want {
			t.Errorf("%s: %d, %v; want %d", tc.d, got, err, tc.want)
		}
	}
	if _, err := CreateToken(context.Background(), TokenOptions{Node: Node{Binary: "/nonexistent"}, TTL: -time.Millisecond}); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("a negative TTL: %v", err)
	}
}
