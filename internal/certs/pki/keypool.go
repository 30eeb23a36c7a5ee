package pki

import (
	"crypto"
	"runtime"
	"sync/atomic"

	kubeadmv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
)

// KeyPool generates private keys ahead of use, on every core. Key
// generation (RSA above all) is most of the time `init` spends on its PKI;
// a pool started early overlaps it with the rest of the run.
type KeyPool struct {
	alg  kubeadmv1.EncryptionAlgorithmType
	keys chan keyOrErr
	// left counts the pool's keys not yet handed out.
	left atomic.Int64
}

type keyOrErr struct {
	key crypto.Signer
	err error
}

// NewKeyPool starts generating n keys of the algorithm in the background.
func NewKeyPool(alg kubeadmv1.EncryptionAlgorithmType, n int) *KeyPool {
	p := &KeyPool{alg: alg, keys: make(chan keyOrErr, n)}
	p.left.Store(int64(n))
	jobs := make(chan struct{}, n)
	for i := 0; i < n; i++ {
		jobs <- struct{}{}
	}
	close(jobs)
	for w := 0; w < min(n, runtime.NumCPU()); w++ {
		go func() {
			for range jobs {
				k, err := NewPrivateKey(alg)
				p.keys <- keyOrErr{k, err}
			}
		}()
	}
	return p
}

// Get returns a pre-generated key of the algorithm, or generates one when
// the pool is used up or was made for another algorithm.
func (p *KeyPool) Get(alg kubeadmv1.EncryptionAlgorithmType) (crypto.Signer, error) {
	if p == nil || alg != p.alg || p.left.Add(-1) < 0 {
		return NewPrivateKey(alg)
	}
	// One of the pool's keys is ours: waiting for it is never slower than
	// starting another while the workers use every core.
	k := <-p.keys
	return k.key, k.err
}
