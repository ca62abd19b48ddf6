// Package fileinput reads files and standard input that users hand to
// Flotilla (manifests, policies, kubeconfigs, CA bundles) with a bound on their
// size, so a wrong path (/dev/zero, a disk image, an endless pipe) is refused
// at once with a message instead of being read until memory runs out.
package fileinput

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Limits for the kinds of input Flotilla reads. A ManifestWork holds at most
// 500 KiB of manifests by default (the hub's --manifest-limit), so 8 MiB of
// YAML per file leaves room for comments, long policies and generous
// configurations while keeping a mistake cheap.
const (
	// ManifestLimit bounds one manifest or policy file (YAML or JSON), and
	// standard input read in its place.
	ManifestLimit int64 = 8 << 20
	// ManifestTotalLimit bounds all the files of one command together (a
	// directory given to -f).
	ManifestTotalLimit int64 = 64 << 20
	// CredentialLimit bounds a kubeconfig or a PEM CA bundle.
	CredentialLimit int64 = 4 << 20
)

// TooLargeError says an input is larger than its limit.
type TooLargeError struct {
	// Name is the file (or "standard input").
	Name string
	// Limit is the bound in bytes; What says what it bounds ("manifest files").
	Limit int64
	What  string
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than %s (the limit for %s)", e.Name, Size(e.Limit), e.What)
}

// Size renders a byte count for people: "8 MiB", "500 KiB", "12 bytes".
func Size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// ReadFile reads the file at path, refusing one larger than limit bytes
// (what names the kind of file in the error). A directory is an error too.
// The size is checked before reading when the file has one (a regular file)
// and while reading otherwise (devices, pipes), so nothing past limit+1 bytes
// is ever read.
func ReadFile(path string, limit int64, what string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s is a directory, not a file", path)
	}
	if st.Mode().IsRegular() && st.Size() > limit {
		return nil, &TooLargeError{Name: path, Limit: limit, What: what}
	}
	return Read(f, path, limit, what)
}

// Read reads r to its end, refusing more than limit bytes; name names r in
// the error ("standard input").
func Read(r io.Reader, name string, limit int64, what string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Name: name, Limit: limit, What: what}
	}
	return data, nil
}

// Budget bounds the total size of several inputs read for one command.
type Budget struct {
	// Limit is the total in bytes; What names the inputs in the error.
	Limit int64
	What  string
	used  int64
}

// Take counts n more bytes read from name, and fails once the total passes
// the limit.
func (b *Budget) Take(name string, n int64) error {
	b.used += n
	if b.used > b.Limit {
		return fmt.Errorf("%w: the files read so far, up to %s, total more than %s", errTotal{b}, name, Size(b.Limit))
	}
	return nil
}

type errTotal struct{ b *Budget }

func (e errTotal) Error() string { return "too much input for " + e.b.What }

// IsTooLarge reports whether err says an input (or several together) was
// larger than its limit.
func IsTooLarge(err error) bool {
	var tl *TooLargeError
	var tot errTotal
	return errors.As(err, &tl) || errors.As(err, &tot)
}
