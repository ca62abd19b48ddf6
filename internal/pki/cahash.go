package pki

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"strings"
)

// CAHashPrefix starts every CA hash: the hash is sha256 over the CA certificate's
// DER-encoded SubjectPublicKeyInfo, as kubeadm's --discovery-token-ca-cert-hash.
const CAHashPrefix = "sha256:"

// CAHashes returns the hash of each certificate in a PEM bundle. `flotilla init`
// prints the hub CA's hash in the join command; `flotilla join --ca-hash` refuses
// a hub CA whose hash is not the one given.
func CAHashes(bundle []byte) []string {
	var out []string
	for rest := bundle; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return out
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			continue
		}
		sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
		out = append(out, CAHashPrefix+hex.EncodeToString(sum[:]))
	}
}

// ParseCAHash checks that s is a CA hash (sha256:<64 hex digits>) and returns it in lower case.
func ParseCAHash(s string) (string, error) {
	hexPart, ok := strings.CutPrefix(strings.ToLower(strings.TrimSpace(s)), CAHashPrefix)
	if b, err := hex.DecodeString(hexPart); !ok || err != nil || len(b) != sha256.Size {
		return "", fmt.Errorf("--ca-hash %q is not %s followed by 64 hex digits (the hash `flotilla init` prints)", s, CAHashPrefix)
	}
	return CAHashPrefix + hexPart, nil
}
