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
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip := n.IP.To4()
		if ip == nil || ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsUnspecified() || ip.IsMulticast() {
			continue
		}
		return ip, nil
	}
	return nil, errors.New("this host has no IPv4 address other than loopback and link-local: the hub apiserver cannot reach an aggregated API here (EndpointSlices refuse 127.0.0.0/8)")
}
