package streamproxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	gwebsocket "github.com/gorilla/websocket"
	pfconst "k8s.io/apimachinery/pkg/util/portforward"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"
)

// tunnel serves a port-forward asked over WebSocket with the
// SPDY/3.1+portforward.k8s.io protocol: it makes the SPDY upgrade towards
// the backend first and, once the backend switched protocols, upgrades the
// client's WebSocket and copies the SPDY bytes through it both ways. A
// backend that refuses the upgrade has its answer passed to the client,
// which then falls back to plain SPDY.
func tunnel(w http.ResponseWriter, r *http.Request, b Backend) {
	var protocols []string
	for _, p := range gwebsocket.Subprotocols(r) {
		if strings.HasPrefix(p, pfconst.WebsocketsSPDYTunnelingPrefix) && strings.HasSuffix(p, pfconst.KubernetesSuffix) {
			protocols = append(protocols, strings.TrimPrefix(p, pfconst.WebsocketsSPDYTunnelingPrefix))
		}
	}
	if len(protocols) == 0 {
		http.Error(w, "unable to upgrade: no tunneling spdy protocols provided", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	backend, err := proxy.DialURL(ctx, b.Location, b.transport())
	cancel()
	if err != nil {
		responder{b.Log}.Error(w, r, fmt.Errorf("dial %s: %w", b.Location.Host, err))
		return
	}
	defer backend.Close()

	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, b.Location.String(), nil)
	if err != nil {
		responder{b.Log}.Error(w, r, err)
		return
	}
	req.Header.Set(httpstream.HeaderConnection, httpstream.HeaderUpgrade)
	req.Header.Set(httpstream.HeaderUpgrade, spdy.HeaderSpdy31)
	for _, p := range protocols {
		req.Header.Add(httpstream.HeaderProtocolVersion, p)
	}
	backend.SetDeadline(time.Now().Add(30 * time.Second))
	if err := req.Write(backend); err != nil {
		responder{b.Log}.Error(w, r, fmt.Errorf("send the upgrade request: %w", err))
		return
	}
	br := bufio.NewReader(backend)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		responder{b.Log}.Error(w, r, fmt.Errorf("read the upgrade response: %w", err))
		return
	}
	backend.SetDeadline(time.Time{})
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, io.LimitReader(resp.Body, 1<<20))
		return
	}
	if !strings.EqualFold(resp.Header.Get(httpstream.HeaderUpgrade), spdy.HeaderSpdy31) {
		responder{b.Log}.Error(w, r, fmt.Errorf("unable to upgrade: the backend switched to %q", resp.Header.Get(httpstream.HeaderUpgrade)))
		return
	}
	chosen := []string{}
	if p := strings.TrimSpace(resp.Header.Get(httpstream.HeaderProtocolVersion)); p != "" {
		chosen = []string{pfconst.WebsocketsSPDYTunnelingPrefix + p}
	}
	upgrader := gwebsocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }, Subprotocols: chosen}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		b.Log.Debug("WebSocket upgrade failed", "path", r.URL.Path, "err", err)
		return // the upgrader wrote its own error
	}
	client := portforward.NewTunnelingConnection("server", ws)
	defer client.Close()
	splice(client, backend, br)
}

// splice copies between the client and the backend (whose first bytes may
// already sit in br) until either side ends, then closes both.
func splice(client, backend net.Conn, br *bufio.Reader) {
	done := make(chan struct{}, 2)
	go func() { io.Copy(backend, client); done <- struct{}{} }()
	go func() { io.Copy(client, br); done <- struct{}{} }()
	<-done
	client.Close()
	backend.Close()
	<-done
}
