package aggregated

import (
	"errors"
	"net"
)

// HostIP returns an IPv4 address of this host that an EndpointSlice accepts
// (not loopback, link-local or unspecified), for a process serving the
// aggregated API beside a local apiserver (tests). It fails when the host has
// none: give one (a dedicated address, as `flotilla dev up` adds).
func HostIP() (net.IP, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var ips []net.IP
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			ips = append(ips, n.IP)
		}
	}
	if ip := PickHostIP(ips); ip != nil {
		return ip, nil
	}
	return nil, errors.New("this host has no IPv4 address other than loopback and link-local: the hub apiserver cannot reach an aggregated API here (EndpointSlices refuse 127.0.0.0/8)")
}

// environments is 198.18.0.0/15, the benchmarking range, from which
// `flotilla dev up` gives each environment (and its nodes' bridge) addresses
// of its own: they go when that environment goes down.
var environments = &net.IPNet{IP: net.IPv4(198, 18, 0, 0).To4(), Mask: net.CIDRMask(15, 32)}

// PickHostIP is HostIP's choice among the host's addresses: the first usable
// IPv4 address outside the environments' range, else the first inside it
// (another environment's address may vanish while a test still uses it), nil
// when none is usable.
func PickHostIP(ips []net.IP) net.IP {
	var fallback net.IP
	for _, ip := range ips {
		ip = ip.To4()
		if ip == nil || ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsUnspecified() || ip.IsMulticast() {
			continue
		}
		if !environments.Contains(ip) {
			return ip
		}
		if fallback == nil {
			fallback = ip
		}
	}
	return fallback
}
