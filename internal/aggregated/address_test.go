package aggregated

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPickHostIP(t *testing.T) {
	ip := net.ParseIP
	for _, tc := range []struct {
		name string
		ips  []net.IP
		want string
	}{
		{"none", nil, "<nil>"},
		{"only loopback and link-local", []net.IP{ip("127.0.0.1"), ip("169.254.1.1"), ip("::1")}, "<nil>"},
		{"the host's address", []net.IP{ip("127.0.0.1"), ip("10.0.0.5")}, "10.0.0.5"},
		{"another environment's address comes after the host's", []net.IP{ip("198.19.245.242"), ip("10.0.0.5")}, "10.0.0.5"},
		{"only environments' addresses: the first", []net.IP{ip("198.18.0.9"), ip("198.19.1.1")}, "198.18.0.9"},
		{"just outside the range", []net.IP{ip("198.20.0.1"), ip("198.17.255.255")}, "198.20.0.1"},
		{"IPv6 skipped", []net.IP{ip("fd00::1"), ip("192.168.1.2")}, "192.168.1.2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, PickHostIP(tc.ips).String())
		})
	}
}
