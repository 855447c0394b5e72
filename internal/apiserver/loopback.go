package apiserver

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"

	"k8s.io/client-go/rest"

	"orch/internal/apiserver/authz"
	"orch/internal/apiserver/filters"
)

// apiserverUser is who the apiserver's own clients act as (upstream's
// loopback identity): admission's informers and lookups.
var apiserverUser = authz.User{Name: "system:apiserver", Groups: []string{authz.SystemPrivilegedGroup, authz.AuthenticatedGroup}}

// loopbackConfig is a client configuration that reaches this server in
// memory, with no socket or TLS, as apiserverUser. It works as soon as the
// server is built, before (and without) any listener.
func (s *Server) loopbackConfig() *rest.Config {
	return &rest.Config{
		Host:      "http://apiserver.loopback",
		Transport: &loopbackTransport{handler: s, user: apiserverUser},
		QPS:       -1,
		UserAgent: "orch-apiserver-loopback",
	}
}

// loopbackTransport serves each request with handler in a goroutine of its
// own; the response body is a pipe the handler writes into, so watches
// stream. Closing the body cancels the request's context.
type loopbackTransport struct {
	handler http.Handler
	user    authz.User
}

func (t *loopbackTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	r := req.Clone(filters.WithUser(ctx, t.user))
	if r.Body == nil {
		r.Body = http.NoBody
	}
	pr, pw := io.Pipe()
	w := &pipeResponse{header: http.Header{}, body: pw, ready: make(chan struct{})}
	go func() {
		defer func() {
			if p := recover(); p != nil {
				w.writeHeader(http.StatusInternalServerError)
				pw.CloseWithError(fmt.Errorf("apiserver loopback: panic: %v", p))
				return
			}
			w.writeHeader(http.StatusOK)
			pw.Close()
		}()
		t.handler.ServeHTTP(w, r)
	}()
	select {
	case <-w.ready:
	case <-req.Context().Done():
		cancel()
		pr.Close()
		return nil, req.Context().Err()
	}
	return &http.Response{
		Status: fmt.Sprintf("%d %s", w.code, http.StatusText(w.code)), StatusCode: w.code,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.sent, Body: &cancelOnClose{ReadCloser: pr, cancel: cancel},
		ContentLength: -1, Request: req,
	}, nil
}

// pipeResponse is the handler's side of a loopback request.
type pipeResponse struct {
	header http.Header
	body   *io.PipeWriter
	once   sync.Once
	ready  chan struct{}
	code   int
	sent   http.Header // the header as it was when the status was written
}

func (w *pipeResponse) Header() http.Header { return w.header }

func (w *pipeResponse) WriteHeader(code int) { w.writeHeader(code) }

func (w *pipeResponse) writeHeader(code int) {
	w.once.Do(func() {
		w.code, w.sent = code, w.header.Clone()
		close(w.ready)
	})
}

func (w *pipeResponse) Write(p []byte) (int, error) {
	w.writeHeader(http.StatusOK)
	return w.body.Write(p)
}

// Flush only sends the status: writes reach the reader as they are made.
func (w *pipeResponse) Flush() { w.writeHeader(http.StatusOK) }

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	c.cancel()
	return c.ReadCloser.Close()
}
