package devenv

import (
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"

	"flotilla.dev/flotilla/devenv/host"
	"flotilla.dev/flotilla/internal/aggregated"
)

// apiAddressDev is the device that holds the hub's aggregated API address.
const apiAddressDev = "lo"

// hubAPIAddress is the address the hub process serves its aggregated API
// (compliance.flotilla.dev) at: the hub apiserver reaches it through an
// EndpointSlice, which refuses loopback. As root, `dev up` adds an address
// of the environment's own (198.18.0.0/15, the benchmarking range, picked from
// the data folder so two environments differ) to lo, recorded in the host
// journal: `dev down` removes it. Otherwise the host's own non-loopback
// address serves.
func hubAPIAddress(opts *Options) (string, error) {
	if os.Geteuid() != 0 {
		ip, err := aggregated.HostIP()
		if err != nil {
			return "", fmt.Errorf("the hub's aggregated API: %w (or run dev up as root: it adds an address of its own)", err)
		}
		return ip.String(), nil
	}
	ip := environmentIP(opts.DataDir)
	j, err := host.Open(opts.journalPath())
	if err != nil {
		return "", err
	}
	if err := j.EnsureAddr(apiAddressDev, ip+"/32"); err != nil {
		return "", fmt.Errorf("add the hub's aggregated API address %s to %s: %w", ip, apiAddressDev, err)
	}
	return ip, nil
}

// environmentIP picks an address in 198.18.0.0/15 from the data folder.
func environmentIP(dataDir string) string {
	if abs, err := filepath.Abs(dataDir); err == nil {
		dataDir = abs
	}
	h := fnv.New32a()
	h.Write([]byte(dataDir))
	v := h.Sum32()
	return fmt.Sprintf("198.%d.%d.%d", 18+v>>24&1, v>>16&0xff, 1+v%254)
}
