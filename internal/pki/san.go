package pki

import (
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
)

// sanSet is the DNS names and IP addresses a serving certificate must cover.
type sanSet struct {
	dnsNames []string
	ips      []net.IP
}

func (s *sanSet) addDNS(name string) {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if name != "" && !slices.Contains(s.dnsNames, name) {
		s.dnsNames = append(s.dnsNames, name)
	}
}

func (s *sanSet) addIP(ip net.IP) {
	if ip == nil {
		return
	}
	if v4 := ip.To4(); v4 != nil {
		ip = v4
	}
	if !slices.ContainsFunc(s.ips, ip.Equal) {
		s.ips = append(s.ips, ip)
	}
}

// wantedSANs lists what the apiserver's serving certificate must cover.
func wantedSANs(cfg Config) (sanSet, error) {
	var s sanSet
	hostname := cfg.Hostname
	if hostname == "" {
		h, err := os.Hostname()
		if err != nil {
			return s, fmt.Errorf("find the hostname for the serving certificate: %w (set --node-name)", err)
		}
		hostname = h
	}
	domain := cfg.ClusterDomain
	if domain == "" {
		domain = DefaultClusterDomain
	}
	cidr := cfg.ServiceCIDR
	if cidr == nil {
		_, cidr, _ = net.ParseCIDR(DefaultServiceCIDR)
	}
	serviceIP, err := FirstServiceIP(cidr)
	if err != nil {
		return s, err
	}

	s.addDNS(hostname)
	s.addDNS("localhost")
	for _, name := range []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc." + domain} {
		s.addDNS(name)
	}
	s.addIP(net.IPv4(127, 0, 0, 1))
	for _, ip := range cfg.NodeIPs {
		s.addIP(ip)
	}
	s.addIP(serviceIP)
	for _, san := range cfg.ExtraSANs {
		san = strings.TrimSpace(san)
		if san == "" {
			continue
		}
		if ip := net.ParseIP(san); ip != nil {
			s.addIP(ip)
			continue
		}
		if !validDNSName(san) {
			return s, fmt.Errorf("--tls-san %q is neither an IP address nor a DNS name: give values like 10.0.0.5 or api.example.com", san)
		}
		s.addDNS(san)
	}
	return s, nil
}

// validDNSName accepts labels of at most 63 letters, digits, '-' and '_'
// joined by '.', with an optional leading "*." wildcard.
func validDNSName(name string) bool {
	name = strings.TrimSuffix(strings.TrimPrefix(name, "*."), ".")
	if name == "" || len(name) > 253 {
		return false
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// coversSANs reports whether cert names every DNS name and IP address given
// (DNS names compared without regard to case).
func coversSANs(cert *x509.Certificate, dnsNames []string, ips []net.IP) bool {
	for _, name := range dnsNames {
		if !slices.ContainsFunc(cert.DNSNames, func(have string) bool { return strings.EqualFold(have, name) }) {
			return false
		}
	}
	for _, ip := range ips {
		if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}

// FirstServiceIP returns the first address of a service CIDR, the ClusterIP
// of the kubernetes Service: 10.43.0.1 for 10.43.0.0/16.
func FirstServiceIP(cidr *net.IPNet) (net.IP, error) {
	if cidr == nil {
		return nil, fmt.Errorf("no service CIDR given: set --service-cidr, e.g. %s", DefaultServiceCIDR)
	}
	ones, bits := cidr.Mask.Size()
	ip := cidr.IP.Mask(cidr.Mask)
	if bits == 0 || ip == nil {
		return nil, fmt.Errorf("service CIDR %q has no valid mask: set --service-cidr, e.g. %s", cidr.String(), DefaultServiceCIDR)
	}
	if bits-ones < 2 {
		return nil, fmt.Errorf("service CIDR %q is too small to hold services: give a larger range to --service-cidr, e.g. %s", cidr.String(), DefaultServiceCIDR)
	}
	if v4 := ip.To4(); v4 != nil && bits == 32 {
		ip = v4
	}
	first := slices.Clone(ip)
	for i := len(first) - 1; i >= 0; i-- {
		first[i]++
		if first[i] != 0 {
			break
		}
	}
	return first, nil
}
