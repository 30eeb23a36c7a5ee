package nethost

import "regexp"

var (
	joinFlags      = regexp.MustCompile(`--token (\S+) \\\s+--discovery-token-ca-cert-hash (\S+)`)
	certificateKey = regexp.MustCompile(`--certificate-key (\S+)`)
)

// JoinCommand is what `kubeboot init` prints for joining its cluster.
type JoinCommand struct {
	Token, Hash string
	// CertificateKey is there only when init uploaded the certificates (--upload-certs).
	CertificateKey string
}

// ParseJoin reads the join command in init's output; ok is false when there is no token and hash.
func ParseJoin(initOutput string) (JoinCommand, bool) {
	m := joinFlags.FindStringSubmatch(initOutput)
	if m == nil {
		return JoinCommand{}, false
	}
	j := JoinCommand{Token: m[1], Hash: m[2]}
	if k := certificateKey.FindStringSubmatch(initOutput); k != nil {
		j.CertificateKey = k[1]
	}
	return j, true
}
