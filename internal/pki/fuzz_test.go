package pki

import (
	"regexp"
	"testing"
)

var hashFormat = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// FuzzCAHashes hashes arbitrary CA bundles (what `join` receives from the hub
// or --ca-file): never a panic, and every hash has the form --ca-hash takes.
func FuzzCAHashes(f *testing.F) {
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"))
	f.Add([]byte("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n-----BEGIN RSA PRIVATE KEY-----\nAA==\n-----END RSA PRIVATE KEY-----\n"))
	f.Add([]byte("not pem"))
	f.Fuzz(func(t *testing.T, bundle []byte) {
		for _, h := range CAHashes(bundle) {
			if !hashFormat.MatchString(h) {
				t.Fatalf("hash %q is not sha256:<64 hex>", h)
			}
		}
	})
}
