// Command pki measures generating a node's full PKI (every certificate and
// key of kubeadm's list, and the service-account key) plus its kubeconfig
// files, for ECDSA-P256 and RSA-2048: median and spread of -runs fresh
// directories, sequential generation as `init phase certs all` does and
// with init's key pool (keys generated on every core ahead of use).
//
//	go run ./bench/pki
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"

	"github.com/kubeboot/kubeboot/bench/internal/benchutil"
	"github.com/kubeboot/kubeboot/internal/base/fsys"
	"github.com/kubeboot/kubeboot/internal/certs/kubeconfig"
	"github.com/kubeboot/kubeboot/internal/certs/pki"
	"github.com/kubeboot/kubeboot/pkg/config"
)

func main() {
	runs := flag.Int("runs", 7, "runs per algorithm and mode")
	flag.Parse()
	fmt.Printf("full PKI + kubeconfigs (%d certificates, sa key, %d kubeconfigs), %d runs each, %d CPUs\n",
		len(pki.List(nil)), len(kubeconfig.List(nil)), *runs, runtime.NumCPU())
	for _, alg := range []kubeadmv1.EncryptionAlgorithmType{kubeadmv1.EncryptionAlgorithmECDSAP256, kubeadmv1.EncryptionAlgorithmRSA2048} {
		for _, pool := range []bool{false, true} {
			var ds []time.Duration
			for i := 0; i < *runs; i++ {
				d, err := once(alg, pool)
				if err != nil {
					fmt.Fprintln(os.Stderr, "bench:", err)
					os.Exit(1)
				}
				ds = append(ds, d)
			}
			mode := "sequential"
			if pool {
				mode = "key pool  "
			}
			fmt.Printf("  %-11s %s  median %8s  min %8s  max %8s\n", alg, mode,
				benchutil.Median(ds).Round(100*time.Microsecond), benchutil.Percentile(ds, 0).Round(100*time.Microsecond), benchutil.Percentile(ds, 100).Round(100*time.Microsecond))
		}
	}
}

func once(alg kubeadmv1.EncryptionAlgorithmType, pool bool) (time.Duration, error) {
	dir, err := os.MkdirTemp("", "kubeboot-pki-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	c := &config.Config{}
	c.EnsureInit()
	c.Init.LocalAPIEndpoint.AdvertiseAddress = "10.0.0.2"
	c.Cluster.EncryptionAlgorithm = alg
	if err := c.DefaultInit(config.Host{Hostname: "bench"}); err != nil {
		return 0, err
	}
	fs := fsys.NewRoot(dir)
	start := time.Now()
	g := &pki.Generator{FS: fs, Cfg: c}
	if pool {
		g.Keys = pki.NewKeyPool(alg, len(pki.List(c))+1+len(kubeconfig.List(c)))
	}
	if err := g.EnsureAll(context.Background()); err != nil {
		return 0, err
	}
	if err := (&kubeconfig.Writer{FS: fs, Cfg: c, PKI: g}).EnsureAll(); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}
