package dns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// listenPair is one Listen address bound for UDP and TCP on the same port.
type listenPair struct {
	udp net.PacketConn
	tcp net.Listener
}

// addr is the bound address, host:port.
func (p listenPair) addr() string { return p.udp.LocalAddr().String() }

func (p listenPair) close() {
	p.udp.Close()
	p.tcp.Close()
}

// freebind lets a socket bind an address that is not (yet) on any
// interface: the agent listens on its pod network's gateway address before
// the bridge that carries it exists.
func freebind(network, _ string, c syscall.RawConn) error {
	level, opt := unix.SOL_IP, unix.IP_FREEBIND
	if strings.HasSuffix(network, "6") {
		level, opt = unix.SOL_IPV6, unix.IPV6_FREEBIND
	}
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), level, opt, 1)
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("set freebind on %s socket: %w", network, serr)
	}
	return nil
}

// listen binds addr for UDP and TCP. Port 0 picks one port that is free
// for both protocols.
func listen(ctx context.Context, addr string) (listenPair, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return listenPair{}, fmt.Errorf("dns: listen address %q is not host:port (e.g. 10.42.0.1:53): %w", addr, err)
	}
	lc := net.ListenConfig{Control: freebind}
	attempts := 1
	if port == "0" {
		attempts = 20
	}
	var lastErr error
	for range attempts {
		pc, err := lc.ListenPacket(ctx, "udp", addr)
		if err != nil {
			return listenPair{}, fmt.Errorf("dns: listen on udp %s (is another DNS server running there?): %w", addr, err)
		}
		_, bound, _ := net.SplitHostPort(pc.LocalAddr().String())
		l, err := lc.Listen(ctx, "tcp", net.JoinHostPort(host, bound))
		if err == nil {
			return listenPair{udp: pc, tcp: l}, nil
		}
		pc.Close()
		lastErr = err
	}
	return listenPair{}, fmt.Errorf("dns: listen on tcp %s (is another DNS server running there?): %w", addr, lastErr)
}

// listenAll binds every address or none.
func listenAll(ctx context.Context, addrs []string) ([]listenPair, error) {
	var pairs []listenPair
	for _, a := range addrs {
		p, err := listen(ctx, a)
		if err != nil {
			for _, p := range pairs {
				p.close()
			}
			return nil, err
		}
		pairs = append(pairs, p)
	}
	if len(pairs) == 0 {
		return nil, errors.New("dns: no listen address (set Config.Listen, e.g. 10.42.0.1:53)")
	}
	return pairs, nil
}
