package hubtemplate

import (
	"encoding/base64"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// protected matches one value protect wrote, anywhere in a string.
var protected = regexp.MustCompile(regexp.QuoteMeta(ProtectedPrefix) + `[A-Za-z0-9+/]+={0,2}`)

// HasProtected reports whether raw holds a value protect encrypted.
func HasProtected(raw []byte) bool { return strings.Contains(string(raw), ProtectedPrefix) }

// DecryptAll returns obj (a decoded JSON value: maps, slices, strings...)
// with every protected value in its strings decrypted with key and iv, as the
// managed cluster does before the policy is evaluated. A value that does not
// decrypt (another cluster's key, a damaged value) fails the whole object,
// naming where it is.
func DecryptAll(obj any, key, iv []byte) (any, error) {
	return decryptValue(obj, key, iv, "")
}

func decryptValue(v any, key, iv []byte, path string) (any, error) {
	switch t := v.(type) {
	case map[string]any:
		// In key order, so the value an error names does not depend on
		// map iteration.
		out := make(map[string]any, len(t))
		for _, k := range slices.Sorted(maps.Keys(t)) {
			d, err := decryptValue(t[k], key, iv, path+"."+k)
			if err != nil {
				return nil, err
			}
			out[k] = d
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			d, err := decryptValue(e, key, iv, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out[i] = d
		}
		return out, nil
	case string:
		if !strings.Contains(t, ProtectedPrefix) {
			return t, nil
		}
		var firstErr error
		out := protected.ReplaceAllStringFunc(t, func(m string) string {
			plain, err := decryptOne(m, key, iv)
			if err != nil && firstErr == nil {
				firstErr = err
			}
			return plain
		})
		if firstErr != nil {
			if path == "" {
				path = "."
			}
			return nil, fmt.Errorf("cannot decrypt the protected value at %s: %w", path, firstErr)
		}
		return out, nil
	default:
		return v, nil
	}
}

func decryptOne(value string, key, iv []byte) (string, error) {
	enc, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(value, ProtectedPrefix))
	if err != nil {
		return "", fmt.Errorf("not base64: %w", err)
	}
	plain, err := Decrypt(key, iv, enc)
	if err != nil {
		return "", fmt.Errorf("%w (was it encrypted for another cluster?)", err)
	}
	return string(plain), nil
}
