package devenv

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestEnvironmentIP(t *testing.T) {
	_, bench, _ := net.ParseCIDR("198.18.0.0/15")
	seen := map[string]bool{}
	for _, dir := range []string{"/a/.flotilla", "/b/.flotilla", "/home/me/.local/state/flotilla/dev", "/tmp/x"} {
		ip := environmentIP(dir)
		assert.Equal(t, ip, environmentIP(dir), "the same folder, the same address")
		parsed := net.ParseIP(ip)
		assert.True(t, bench.Contains(parsed), "%s in 198.18.0.0/15", ip)
		assert.False(t, parsed.IsLoopback() || parsed.IsUnspecified() || parsed.To4()[3] == 0 || parsed.To4()[3] == 255, ip)
		seen[ip] = true
	}
	assert.Len(t, seen, 4, "different folders, different addresses")
}
