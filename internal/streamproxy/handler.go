package streamproxy

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/streaming/pkg/httpstream/wsstream"
)

// Kind is the kind of a streaming request.
type Kind string

// The streaming requests.
const (
	Exec        Kind = "exec"
	Attach      Kind = "attach"
	PortForward Kind = "portforward"
)

// Options are the streams an exec or attach asks for.
type Options struct {
	Stdin, Stdout, Stderr, TTY bool
}

// OptionsFrom reads the stdin, stdout, stderr and tty query parameters.
func OptionsFrom(q url.Values) Options {
	return Options{Stdin: queryBool(q, "stdin"), Stdout: queryBool(q, "stdout"), Stderr: queryBool(q, "stderr"), TTY: queryBool(q, "tty")}
}

// Backend is where a streaming request goes.
type Backend struct {
	// Location is the URL of the backend's exec, attach or port-forward
	// endpoint, query included.
	Location *url.URL
	// TLS configures https backends (nil for http).
	TLS *tls.Config
	// Log receives proxy errors; nil discards them.
	Log *slog.Logger
	// Dial connects to the backend; nil: a plain dial.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// transport is Transport for b.
func (b Backend) transport() *http.Transport {
	t := Transport(b.TLS)
	if b.Dial != nil {
		t.DialContext = b.Dial
	}
	return t
}

// Handler proxies one streaming request of kind to b: WebSocket v5 exec and
// attach are translated to SPDY, WebSocket port-forward is tunnelled, and
// everything else is passed through as an upgrade.
func Handler(kind Kind, b Backend, opts Options) http.Handler {
	if b.Log == nil {
		b.Log = slog.New(slog.DiscardHandler)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case (kind == Exec || kind == Attach) && wsstream.IsWebSocketRequestWithStreamCloseProtocol(r):
			translate(w, r, b, opts)
		case kind == PortForward && wsstream.IsWebSocketRequestWithTunnelingProtocol(r):
			tunnel(w, r, b)
		default:
			Upgrade(b).ServeHTTP(w, r)
		}
	})
}

// Upgrade is apimachinery's UpgradeAwareHandler towards b.Location, with
// the upgrade required and redirects refused.
func Upgrade(b Backend) http.Handler {
	h := proxy.NewUpgradeAwareHandler(b.Location, b.transport(), false, true, responder{b.Log})
	h.RejectForwardingRedirects = true
	return h
}

// Transport is an HTTP/1.1 transport with tls (nil for plain HTTP), as the
// upgrade dialer needs (it reads the TLS configuration from it). It uses no
// HTTP proxy: nodes and runtimes are reached directly.
func Transport(tlsConfig *tls.Config) *http.Transport {
	return &http.Transport{
		TLSClientConfig:     tlsConfig,
		TLSHandshakeTimeout: 10 * time.Second,
		ForceAttemptHTTP2:   false,
		MaxIdleConnsPerHost: 25,
		IdleConnTimeout:     90 * time.Second,
	}
}

// responder writes proxy errors as plain-text 500s, as upstream's kubelet does.
type responder struct{ log *slog.Logger }

func (r responder) Error(w http.ResponseWriter, req *http.Request, err error) {
	r.log.Warn("proxying a streaming request failed", "path", req.URL.Path, "err", err)
	http.Error(w, fmt.Sprintf("error while proxying the request: %v", err), http.StatusInternalServerError)
}
