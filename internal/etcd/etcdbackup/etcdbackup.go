// Package etcdbackup saves a control plane's etcd with what is needed to
// bring the cluster back from it, and brings it back: one file holding
// etcd's own snapshot (etcd's client/v3/snapshot), the cluster's shared
// keys (the CAs, the service-account key, the key of Secrets at rest with
// --hardened) and its configuration (kubeadm-config, kubelet-config and
// kube-proxy's, as a joining node reads them). A snapshot alone is not a
// backup: without the service-account key no token in it verifies, and
// without the CA no kubeconfig of the old cluster works.
package etcdbackup

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/snapshot"
	etcdutl "go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"

	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/certs/bootstrap"
	"github.com/kubeboot/kubeboot/internal/etcd/etcdclient"
	"github.com/kubeboot/kubeboot/pkg/config"
)

// Names inside the bundle.
const (
	manifestName = "kubeboot-snapshot.json"
	configName   = "configuration.yaml"
	dbName       = "etcd/snapshot.db"
	pkiPrefix    = "pki/"
)

// Manifest describes a bundle.
type Manifest struct {
	Format            int       `json:"format"`
	Created           time.Time `json:"created"`
	Node              string    `json:"node"`
	KubernetesVersion string    `json:"kubernetesVersion"`
	EtcdVersion       string    `json:"etcdVersion,omitempty"`
	Revision          int64     `json:"revision"`
	Keys              int       `json:"keys"`
	SnapshotBytes     int64     `json:"snapshotBytes"`
	PKI               []string  `json:"pki"`
}

// Client is a client of this node's etcd member, with the API server's
// etcd client certificate (node paths under fs).
func Client(fs fsys.FS, certificatesDir string) (*clientv3.Config, error) {
	c, err := etcdclient.Config(fs.Path(certificatesDir), 5*time.Second, etcdclient.Local)
	if err != nil {
		return nil, fmt.Errorf("this node has no etcd client (%w): run this on a control-plane node with a local etcd member", err)
	}
	return c, nil
}

// Save writes the bundle to file (mode 0600, through a temporary file in
// the same directory, so a failed save leaves nothing), from this node's
// etcd member, with cfg (the cluster's configuration as FetchConfig reads
// it) and the shared keys under fs.
func Save(ctx context.Context, fs fsys.FS, cfg *config.Config, node, file string) (*Manifest, error) {
	cc, err := Client(fs, cfg.Cluster.CertificatesDir)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(file)
	tmpDB, err := os.CreateTemp(dir, ".kubeboot-snapshot-*.db")
	if err != nil {
		return nil, err
	}
	tmpDB.Close()
	defer os.Remove(tmpDB.Name())
	etcdVersion, err := snapshot.SaveWithVersion(ctx, zap.NewNop(), *cc, tmpDB.Name())
	if err != nil {
		return nil, fmt.Errorf("taking etcd's snapshot: %w", err)
	}
	st, err := etcdutl.NewV3(zap.NewNop()).Status(tmpDB.Name())
	if err != nil {
		return nil, fmt.Errorf("reading the snapshot back: %w", err)
	}
	m := &Manifest{Format: 1, Created: time.Now().UTC(), Node: node, KubernetesVersion: cfg.Cluster.KubernetesVersion,
		EtcdVersion: etcdVersion, Revision: st.Revision, Keys: st.TotalKey, SnapshotBytes: st.TotalSize}
	conf, err := cfg.Marshal()
	if err != nil {
		return nil, err
	}
	type entry struct {
		name string
		data []byte
		file string
	}
	entries := []entry{{name: configName, data: conf}, {name: dbName, file: tmpDB.Name()}}
	for _, f := range bootstrap.SharedFiles(cfg) {
		b, err := fs.ReadFile(path.Join(cfg.Cluster.CertificatesDir, f.Name))
		if os.IsNotExist(err) && f.Optional {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", fs.Path(path.Join(cfg.Cluster.CertificatesDir, f.Name)), err)
		}
		entries = append(entries, entry{name: pkiPrefix + f.Name, data: b})
		m.PKI = append(m.PKI, f.Name)
	}
	mb, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	entries = append([]entry{{name: manifestName, data: mb}}, entries...)

	out, err := os.CreateTemp(dir, ".kubeboot-snapshot-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(out.Name()) // after the rename, a no-op
	if err := out.Chmod(0o600); err != nil {
		out.Close()
		return nil, err
	}
	gz := gzip.NewWriter(out)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		data := e.data
		if e.file != "" {
			if data, err = os.ReadFile(e.file); err != nil {
				out.Close()
				return nil, err
			}
		}
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o600, Size: int64(len(data)), ModTime: m.Created}); err != nil {
			out.Close()
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			out.Close()
			return nil, err
		}
	}
	err = errors.Join(tw.Close(), gz.Close(), out.Sync(), out.Close())
	if err != nil {
		return nil, err
	}
	if err := os.Rename(out.Name(), file); err != nil {
		return nil, err
	}
	return m, nil
}

// Bundle is a read bundle.
type Bundle struct {
	Manifest Manifest
	Config   *config.Config
	PKI      map[string][]byte
	// DB is the snapshot, extracted to a temporary file; Close removes it.
	DB string
}

// Close removes the extracted snapshot.
func (b *Bundle) Close() { os.Remove(b.DB) }

// Read reads and checks a bundle.
func Read(file string) (*Bundle, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s is not a kubeboot snapshot (%v)", file, err)
	}
	tr := tar.NewReader(gz)
	b := &Bundle{PKI: map[string][]byte{}}
	var conf []byte
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("reading %s: %w", file, err)
		}
		switch {
		case h.Name == manifestName:
			mb, err := io.ReadAll(tr)
			if err == nil {
				err = json.Unmarshal(mb, &b.Manifest)
			}
			if err != nil {
				b.Close()
				return nil, fmt.Errorf("%s: %s: %v", file, manifestName, err)
			}
		case h.Name == configName:
			if conf, err = io.ReadAll(tr); err != nil {
				b.Close()
				return nil, err
			}
		case h.Name == dbName:
			tmp, err := os.CreateTemp("", "kubeboot-restore-*.db")
			if err != nil {
				return nil, err
			}
			b.DB = tmp.Name()
			_, err = io.Copy(tmp, tr)
			if err = errors.Join(err, tmp.Close()); err != nil {
				b.Close()
				return nil, err
			}
		case strings.HasPrefix(h.Name, pkiPrefix):
			data, err := io.ReadAll(tr)
			if err != nil {
				b.Close()
				return nil, err
			}
			b.PKI[strings.TrimPrefix(h.Name, pkiPrefix)] = data
		}
	}
	switch {
	case b.Manifest.Format != 1:
		b.Close()
		return nil, fmt.Errorf("%s is not a kubeboot snapshot (no %s of format 1)", file, manifestName)
	case conf == nil || b.DB == "":
		b.Close()
		return nil, fmt.Errorf("%s is incomplete: it lacks the configuration or etcd's snapshot", file)
	}
	if b.Config, err = config.Parse(file+": "+configName, conf); err != nil {
		b.Close()
		return nil, err
	}
	if b.Config.Cluster == nil {
		b.Close()
		return nil, fmt.Errorf("%s holds no ClusterConfiguration", file)
	}
	for _, name := range b.Manifest.PKI {
		if _, ok := b.PKI[name]; !ok {
			b.Close()
			return nil, fmt.Errorf("%s lacks %s, which its manifest lists", file, name)
		}
	}
	return b, nil
}

// RestoreData writes the shared keys into the certificates dir and etcd's
// data dir from the snapshot, as a one-member cluster of this node (etcd's
// own restore: new member, the data, the snapshot's hash checked).
func (b *Bundle) RestoreData(fs fsys.FS, cfg *config.Config, node, peerURL string) error {
	for name, data := range b.PKI {
		mode := bootstrap.SharedFileMode(name)
		p := path.Join(cfg.Cluster.CertificatesDir, name)
		if err := fs.MkdirAll(path.Dir(p), 0o700); err != nil {
			return err
		}
		if err := fs.WriteFile(p, data, mode); err != nil {
			return err
		}
	}
	dataDir := fs.Path(cfg.Cluster.Etcd.Local.DataDir)
	if err := os.MkdirAll(filepath.Dir(dataDir), 0o755); err != nil {
		return err
	}
	return etcdutl.NewV3(zap.NewNop()).Restore(etcdutl.RestoreConfig{
		SnapshotPath: b.DB, Name: node, OutputDataDir: dataDir,
		PeerURLs: []string{peerURL}, InitialCluster: node + "=" + peerURL, InitialClusterToken: "etcd-cluster",
	})
}
