// Package testimage writes image archives for tests: an operator's own
// images, made as `docker save` makes them, with one program as their only
// file, to import into a node with `kubeboot images import`.
package testimage

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"time"
)

// OneFileLayer is an uncompressed layer whose only file is an executable.
func OneFileLayer(name string, prog []byte) *bytes.Buffer {
	var layer bytes.Buffer
	lw := tar.NewWriter(&layer)
	lw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(prog)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}) //nolint:errcheck
	lw.Write(prog)                                                                                                                //nolint:errcheck
	lw.Close()
	return &layer
}

// WriteDockerSave writes, as `docker save` does, an archive of one image
// named ref whose only file is the program at bin, run as /app.
func WriteDockerSave(file, ref, bin string) error {
	prog, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	layer := OneFileLayer("app", prog)
	sum := sha256.Sum256(layer.Bytes())
	diffID := "sha256:" + hex.EncodeToString(sum[:])
	cfg, _ := json.Marshal(map[string]any{
		"architecture": "amd64", "os": "linux",
		"config": map[string]any{"Entrypoint": []string{"/app"}},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{diffID}},
	})
	cfgSum := sha256.Sum256(cfg)
	cfgName := hex.EncodeToString(cfgSum[:]) + ".json"
	layerName := hex.EncodeToString(sum[:]) + "/layer.tar"
	manifest, _ := json.Marshal([]map[string]any{{"Config": cfgName, "RepoTags": []string{ref}, "Layers": []string{layerName}}})
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	for _, f := range []struct {
		name string
		data []byte
	}{{cfgName, cfg}, {layerName, layer.Bytes()}, {"manifest.json", manifest}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return os.WriteFile(file, out.Bytes(), 0o644)
}
