package server

import (
	"errors"
	"fmt"
	"net"
)

// errOnlyLoopback is why a server on a host with no address but loopback
// does not start: the kubernetes Service's endpoints may not be loopback,
// and no other node could reach it.
var errOnlyLoopback = errors.New("orch server: no usable address: the host has only loopback; " +
	"pass --node-ip / --advertise-address or bring up an interface")

// chooseAdvertise is the address the server advertises: --advertise-address
// (flag), else the first --node-ip, else the host's first non-loopback
// address (hostIP, which answers loopback or nil when there is none). An
// address given is taken as it is, loopback too (a server for this host
// alone, as in tests); one found on a host with only loopback is an error
// that says what to do.
func chooseAdvertise(flag string, nodeIPs []net.IP, hostIP func() net.IP) (net.IP, error) {
	switch {
	case flag != "":
		ip := net.ParseIP(flag)
		if ip == nil {
			return nil, fmt.Errorf("--advertise-address %q is not an IP address", flag)
		}
		return ip, nil
	case len(nodeIPs) > 0:
		return nodeIPs[0], nil
	}
	ip := hostIP()
	if ip == nil || ip.IsLoopback() || ip.IsUnspecified() {
		return nil, errOnlyLoopback
	}
	return ip, nil
}
