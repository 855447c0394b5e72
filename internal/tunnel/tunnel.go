// Package tunnel lets a server reach an agent's kubelet when it cannot dial
// the node (NAT, a firewall, port 10250 closed): the agent opens a
// connection to the server's API port, upgrades it to a tunnel, and the
// server opens streams over it (yamux) that the agent connects to its own
// kubelet port. k3s's agent does the same with its remotedialer.
//
// The agent side is Agent (a run.Runnable that keeps the tunnel up,
// reconnecting with backoff); the server side is Registry: its Handler
// takes the upgrades of nodes that present their client certificate, and
// Dial opens a stream to a node's kubelet.
package tunnel

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
)

// Path is where agents ask for a tunnel, on the apiserver's port.
const Path = "/orch/v1/tunnel"

// protocol is the Upgrade token of a tunnel.
const protocol = "orch-tunnel/1"

// ErrNoTunnel is Dial's error for a node with no tunnel open.
var ErrNoTunnel = errors.New("no tunnel from the node")

// yamuxConfig is the sessions' configuration: keep-alives find a dead
// link within about 45 s; logs go nowhere (errors come back as values).
func yamuxConfig() *yamux.Config {
	c := yamux.DefaultConfig()
	c.KeepAliveInterval = 15 * time.Second
	c.ConnectionWriteTimeout = 30 * time.Second
	c.LogOutput = io.Discard
	return c
}

// Registry holds the tunnels agents opened, one per node.
type Registry struct {
	mu       sync.Mutex
	sessions map[string]*yamux.Session
	log      *slog.Logger
}

// NewRegistry returns an empty registry.
func NewRegistry(log *slog.Logger) *Registry {
	return &Registry{sessions: map[string]*yamux.Session{}, log: log}
}

// Handler takes tunnel upgrades. node names the node a request comes
// from (its verified client certificate's), or ok false for anyone else,
// who gets 403.
func (r *Registry) Handler(node func(*http.Request) (name string, ok bool)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		name, ok := node(req)
		if !ok {
			http.Error(w, "a tunnel is only for a node, with its client certificate", http.StatusForbidden)
			return
		}
		if req.Method != http.MethodGet || !strings.EqualFold(req.Header.Get("Upgrade"), protocol) {
			http.Error(w, "GET "+Path+" with Upgrade: "+protocol+" opens a tunnel", http.StatusBadRequest)
			return
		}
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			http.Error(w, "this connection cannot carry a tunnel (HTTP/1.1 is needed)", http.StatusBadRequest)
			return
		}
		if _, err := buf.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + protocol + "\r\n\r\n"); err == nil {
			err = buf.Flush()
		}
		if err != nil {
			conn.Close()
			return
		}
		session, err := yamux.Client(&bufferedConn{Conn: conn, r: buf.Reader}, yamuxConfig())
		if err != nil {
			conn.Close()
			return
		}
		r.mu.Lock()
		if old := r.sessions[name]; old != nil {
			old.Close()
		}
		r.sessions[name] = session
		r.mu.Unlock()
		r.log.Info("tunnel from a node opened", "node", name, "remote", req.RemoteAddr)
		<-session.CloseChan()
		r.mu.Lock()
		if r.sessions[name] == session {
			delete(r.sessions, name)
		}
		r.mu.Unlock()
		r.log.Info("tunnel from a node closed", "node", name)
	})
}

// Dial opens a stream to node's kubelet through its tunnel.
func (r *Registry) Dial(ctx context.Context, node string) (net.Conn, error) {
	r.mu.Lock()
	session := r.sessions[node]
	r.mu.Unlock()
	if session == nil {
		return nil, fmt.Errorf("node %q: %w", node, ErrNoTunnel)
	}
	type result struct {
		conn net.Conn
		err  error
	}
	done := make(chan result, 1)
	go func() {
		c, err := session.Open()
		done <- result{c, err}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			return nil, fmt.Errorf("node %q: tunnel: %w", node, res.err)
		}
		return res.conn, nil
	case <-ctx.Done():
		go func() {
			if res := <-done; res.conn != nil {
				res.conn.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// Drop closes node's tunnel (the agent opens another).
func (r *Registry) Drop(node string) {
	r.mu.Lock()
	session := r.sessions[node]
	delete(r.sessions, node)
	r.mu.Unlock()
	if session != nil {
		session.Close()
	}
}

// Has reports whether node has a tunnel open.
func (r *Registry) Has(node string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sessions[node] != nil
}

// bufferedConn reads first what the HTTP server had buffered.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// Agent keeps a tunnel to the server open and connects the server's
// streams to the local kubelet.
type Agent struct {
	// Server is the server's URL (https://host:port); TLS verifies it and
	// presents the node's client certificate.
	Server string
	TLS    *tls.Config
	// Dial connects to the servers (e.g. the agent's load balancer over
	// them); nil: a plain dial of Server's host.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Local is the kubelet's address, e.g. 127.0.0.1:10250.
	Local string
	Log   *slog.Logger
	// MaxBackoff bounds the wait between attempts (30 s when zero).
	MaxBackoff time.Duration
}

// Start keeps the tunnel up until ctx ends.
func (a *Agent) Start(ctx context.Context) error {
	maxBackoff := a.MaxBackoff
	if maxBackoff <= 0 {
		maxBackoff = 30 * time.Second
	}
	backoff := 500 * time.Millisecond
	for ctx.Err() == nil {
		session, err := a.connect(ctx)
		if err == nil {
			backoff = 500 * time.Millisecond
			a.Log.Info("tunnel to the server open", "server", a.Server)
			a.serve(ctx, session)
			continue
		}
		if ctx.Err() != nil {
			break
		}
		a.Log.Debug("cannot open the tunnel to the server; retrying", "err", err, "next-try-in", backoff.String())
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
	return nil
}

// connect opens the tunnel: TLS to the server, GET Path with Upgrade.
func (a *Agent) connect(ctx context.Context) (*yamux.Session, error) {
	u, err := url.Parse(a.Server)
	if err != nil {
		return nil, err
	}
	dial := a.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: 10 * time.Second}).DialContext
	}
	raw, err := dial(ctx, "tcp", u.Host)
	if err != nil {
		return nil, err
	}
	cfg := a.TLS.Clone()
	cfg.NextProtos = []string{"http/1.1"} // an upgrade needs HTTP/1.1, not h2
	if cfg.ServerName == "" {
		cfg.ServerName = u.Hostname()
	}
	conn := tls.Client(raw, cfg)
	deadline := time.Now().Add(30 * time.Second)
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	req, _ := http.NewRequest(http.MethodGet, "https://"+u.Host+Path, nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", protocol)
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, err
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		conn.Close()
		return nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		conn.Close()
		return nil, fmt.Errorf("the server refused the tunnel: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	conn.SetDeadline(time.Time{})
	return yamux.Server(&bufferedConn{Conn: conn, r: br}, yamuxConfig())
}

// serve connects each stream the server opens to the kubelet until the
// session or ctx ends.
func (a *Agent) serve(ctx context.Context, session *yamux.Session) {
	stop := context.AfterFunc(ctx, func() { session.Close() })
	defer stop()
	defer session.Close()
	for {
		stream, err := session.Accept()
		if err != nil {
			return
		}
		go a.relay(ctx, stream)
	}
}

// relay copies between a stream and a new connection to the kubelet.
func (a *Agent) relay(ctx context.Context, stream net.Conn) {
	defer stream.Close()
	local, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", a.Local)
	if err != nil {
		a.Log.Warn("tunnel: cannot reach the kubelet", "address", a.Local, "err", err)
		return
	}
	defer local.Close()
	done := make(chan struct{}, 2)
	go func() { io.Copy(local, stream); closeWrite(local); done <- struct{}{} }()
	go func() { io.Copy(stream, local); stream.Close(); done <- struct{}{} }()
	<-done
	<-done
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}
