package server

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// reservedSANs are the names and addresses clients reach the apiservers
// at. A node's serving certificate must name none of them: the cluster CA
// signs both, so a node holding one could pose as the apiserver to every
// client that dials that name.
type reservedSANs struct {
	dns map[string]string // lower-case name → what it is
	ips []reservedIP
}

type reservedIP struct {
	ip  net.IP
	why string
}

func (r *reservedSANs) addDNS(name, why string) {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if name == "" {
		return
	}
	if r.dns == nil {
		r.dns = map[string]string{}
	}
	if _, ok := r.dns[name]; !ok {
		r.dns[name] = why
	}
}

func (r *reservedSANs) addIP(ip net.IP, why string) {
	if ip == nil || slices.ContainsFunc(r.ips, func(have reservedIP) bool { return have.ip.Equal(ip) }) {
		return
	}
	r.ips = append(r.ips, reservedIP{ip, why})
}

// apiserverSANs reserves what every apiserver answers to (localhost, the
// kubernetes Service's names) and every SAN of this server's serving
// certificate: its host name, node IPs, advertise address, the first
// service IP, the kubernetes Service's names in the cluster domain and
// every --tls-san.
func apiserverSANs(serving *x509.Certificate) reservedSANs {
	var r reservedSANs
	for _, name := range []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"} {
		r.addDNS(name, "a name of every apiserver")
	}
	r.addIP(net.IPv4(127, 0, 0, 1), "the loopback address of every apiserver")
	r.addIP(net.IPv6loopback, "the loopback address of every apiserver")
	if serving != nil {
		for _, name := range serving.DNSNames {
			r.addDNS(name, "a name in this server's apiserver certificate")
		}
		for _, ip := range serving.IPAddresses {
			r.addIP(ip, "an address in this server's apiserver certificate")
		}
	}
	return r
}

// addMembers reserves the node name and the addresses of every server of
// the cluster, as its etcd members name them (member NODE-<8 hex>, peer and
// client URLs on the server's advertise address).
func (r *reservedSANs) addMembers(members []memberInfo) {
	for _, m := range members {
		if node := memberNode(m.name); node != "" {
			r.addDNS(node, "the node name of server "+m.name)
		}
		for _, raw := range m.urls {
			u, err := url.Parse(raw)
			if err != nil {
				continue
			}
			host := u.Hostname()
			if ip := net.ParseIP(host); ip != nil {
				r.addIP(ip, "the address of server "+m.name)
			} else {
				r.addDNS(host, "the address of server "+m.name)
			}
		}
	}
}

// memberInfo is what addMembers needs of an etcd member.
type memberInfo struct {
	name string
	urls []string // peer and client URLs
}

// listServers lists the cluster's servers from etcd.
func listServers(ctx context.Context, client *clientv3.Client) ([]memberInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	list, err := client.MemberList(ctx)
	if err != nil {
		return nil, err
	}
	var out []memberInfo
	for _, m := range list.Members {
		out = append(out, memberInfo{name: m.Name, urls: append(slices.Clone(m.PeerURLs), m.ClientURLs...)})
	}
	return out, nil
}

// check refuses a serving certificate request that names a reserved
// name or address, naming it in a sentence that says what to do.
func (r reservedSANs) check(csr *x509.CertificateRequest) error {
	for _, name := range csr.DNSNames {
		if why, ok := r.dns[strings.ToLower(strings.TrimSuffix(name, "."))]; ok {
			return fmt.Errorf("serving certificate request: DNS name %q is %s, and a node's serving certificate may not name an apiserver: "+
				"give this node another --node-name (and host name)", name, why)
		}
	}
	for _, ip := range csr.IPAddresses {
		for _, have := range r.ips {
			if have.ip.Equal(ip) {
				return fmt.Errorf("serving certificate request: IP address %s is %s, and a node's serving certificate may not name an apiserver: "+
					"give this node its own --node-ip", ip, have.why)
			}
		}
	}
	return nil
}
