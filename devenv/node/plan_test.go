package node

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlanIsStableAndPrivate(t *testing.T) {
	a, b := NewPlan("/work/env-a"), NewPlan("/work/env-b")
	assert.Equal(t, a, NewPlan("/work/env-a"), "the same data folder always gets the same plan")
	assert.NotEqual(t, a.ID, b.ID)
	for _, p := range []Plan{a, b} {
		_, private, _ := net.ParseCIDR("10.0.0.0/8")
		_, subnet, err := net.ParseCIDR(p.Subnet())
		require.NoError(t, err)
		assert.True(t, private.Contains(subnet.IP), "%s is private", p.Subnet())
		for _, ip := range []string{p.HostIP(), p.NodeIP(0), p.NodeIP(MaxNodes)} {
			assert.True(t, subnet.Contains(net.ParseIP(ip)), "%s in %s", ip, p.Subnet())
		}
		for _, i := range []int{0, 1, MaxNodes} {
			_, pods, err := net.ParseCIDR(p.PodCIDR(i))
			require.NoError(t, err)
			assert.True(t, subnet.Contains(pods.IP))
			assert.False(t, pods.Contains(net.ParseIP(p.HostIP())), "Pod range %s apart from the host address", p.PodCIDR(i))
			assert.LessOrEqual(t, len(p.PodBridge(i)), 15, "device names fit IFNAMSIZ")
		}
		assert.LessOrEqual(t, len(p.Bridge()), 15)
	}
	assert.NotEqual(t, a.PodCIDR(1), a.PodCIDR(2))
	assert.NotEqual(t, a.NodeIP(1), a.NodeIP(2))
}

func TestPlanOverlaps(t *testing.T) {
	p := Plan{ID: "abcd", Octet: 150}
	own := func(dev string) bool { return dev == p.Bridge() || dev == p.PodBridge(1) }
	tests := []struct {
		name   string
		routes []Route
		want   int
	}{
		{"nothing in the way", []Route{{"192.0.2.0/24", "eth0"}, {"0.0.0.0/0", "eth0"}}, 0},
		{"our own devices", []Route{{"10.150.0.0/16", p.Bridge()}, {"10.150.2.0/24", p.PodBridge(1)}}, 0},
		{"a host route inside", []Route{{"10.150.7.0/24", "docker0"}}, 1},
		{"a host route around", []Route{{"10.0.0.0/8", "tun0"}}, 1},
		{"a neighbour range", []Route{{"10.151.0.0/16", "flffff-node"}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Len(t, p.Overlaps(tt.routes, own), tt.want)
		})
	}
}
