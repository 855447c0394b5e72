package network

import "net"

// HostIP is the first global unicast IPv4 address of an interface that is
// up and not a loopback, or 127.0.0.1 when there is none (a node with no
// network still works on its own).
func HostIP() net.IP {
	ifaces, _ := net.Interfaces()
	for _, iface := range ifaces {
		if iface.Flags&net.FlagUp == 0 || iface.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := iface.Addrs()
		for _, a := range addrs {
			if ipnet, ok := a.(*net.IPNet); ok && ipnet.IP.To4() != nil && ipnet.IP.IsGlobalUnicast() {
				return ipnet.IP.To4()
			}
		}
	}
	return net.IPv4(127, 0, 0, 1).To4()
}
