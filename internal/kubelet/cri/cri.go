// Package cri connects the kubelet to a container runtime over the Container
// Runtime Interface (k8s.io/cri-api, runtime v1): containerd's CRI plugin,
// whether orch started containerd itself or was given an existing socket.
//
// Runtime is a thin layer over the generated gRPC clients: every call gets a
// timeout, errors name the call and the object, and results are the CRI
// types themselves. The kubelet declares the few methods it needs as small
// interfaces where it uses them; Fake implements the same method set in
// memory for its unit tests.
package cri

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// APIVersion is the CRI version orch speaks.
const APIVersion = "v1"

// DefaultTimeout bounds every call that has no longer bound of its own,
// like the kubelet's --runtime-request-timeout.
const DefaultTimeout = 2 * time.Minute

// maxMsgSize is the largest message accepted, as in upstream's CRI client.
const maxMsgSize = 16 << 20

// ErrRuntimeVersion is wrapped by Connect when the runtime does not speak CRI v1.
var ErrRuntimeVersion = errors.New("the container runtime does not speak CRI v1")

// Runtime is a connection to a CRI runtime and image service.
type Runtime struct {
	endpoint string
	conn     *grpc.ClientConn
	runtime  runtimeapi.RuntimeServiceClient
	images   runtimeapi.ImageServiceClient
	timeout  time.Duration
	version  *runtimeapi.VersionResponse
	// intercept wraps every unary call (e.g. to count and time them).
	intercept []grpc.UnaryClientInterceptor
}

// Option changes how Connect sets up a Runtime.
type Option func(*Runtime)

// WithTimeout sets the per-call timeout (DefaultTimeout when not given).
func WithTimeout(d time.Duration) Option { return func(r *Runtime) { r.timeout = d } }

// WithInterceptor wraps every unary call of the Runtime in i.
func WithInterceptor(i grpc.UnaryClientInterceptor) Option {
	return func(r *Runtime) { r.intercept = append(r.intercept, i) }
}

// Connect dials the CRI endpoint — a unix socket path or a unix:// URL — and
// checks that the runtime answers Version with CRI v1. The connection
// survives runtime restarts: gRPC reconnects on the next call.
func Connect(ctx context.Context, endpoint string, opts ...Option) (*Runtime, error) {
	path, err := SocketPath(endpoint)
	if err != nil {
		return nil, err
	}
	r := &Runtime{endpoint: endpoint, timeout: DefaultTimeout}
	for _, o := range opts {
		o(r)
	}
	conn, err := grpc.NewClient("unix://"+path,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsgSize), grpc.MaxCallSendMsgSize(maxMsgSize)),
		grpc.WithChainUnaryInterceptor(r.intercept...))
	if err != nil {
		return nil, fmt.Errorf("cri: connect to %q: %w", endpoint, err)
	}
	r.conn = conn
	r.runtime = runtimeapi.NewRuntimeServiceClient(conn)
	r.images = runtimeapi.NewImageServiceClient(conn)
	if r.version, err = r.Version(ctx); err != nil {
		conn.Close()
		switch status.Code(err) {
		case codes.Unimplemented:
			return nil, fmt.Errorf("cri: the runtime at %q does not serve the CRI v1 API (runtime.v1.RuntimeService); containerd 1.6 or later with its CRI plugin enabled does: %w", endpoint, ErrRuntimeVersion)
		case codes.Unavailable, codes.DeadlineExceeded:
			return nil, fmt.Errorf("cri: no container runtime answers at %q (is containerd running? pass --container-runtime-endpoint for another socket): %w", endpoint, err)
		}
		return nil, err
	}
	if r.version.RuntimeApiVersion != APIVersion {
		conn.Close()
		return nil, fmt.Errorf("cri: the runtime at %q (%s %s) speaks CRI %q, orch needs %q: %w",
			endpoint, r.version.RuntimeName, r.version.RuntimeVersion, r.version.RuntimeApiVersion, APIVersion, ErrRuntimeVersion)
	}
	return r, nil
}

// SocketPath returns the socket path of a CRI endpoint given as a path or a
// unix:// URL.
func SocketPath(endpoint string) (string, error) {
	path := endpoint
	if strings.Contains(endpoint, "://") {
		u, err := url.Parse(endpoint)
		if err != nil {
			return "", fmt.Errorf("cri: endpoint %q: %w", endpoint, err)
		}
		if u.Scheme != "unix" {
			return "", fmt.Errorf("cri: endpoint %q: only unix sockets are supported (e.g. unix:///run/containerd/containerd.sock)", endpoint)
		}
		path = u.Host + u.Path
	}
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("cri: endpoint %q: want an absolute socket path or a unix:// URL, e.g. unix:///run/containerd/containerd.sock", endpoint)
	}
	return filepath.Clean(path), nil
}

// Endpoint is the endpoint Connect was given.
func (r *Runtime) Endpoint() string { return r.endpoint }

// RuntimeVersion is the Version answer Connect checked.
func (r *Runtime) RuntimeVersion() *runtimeapi.VersionResponse { return r.version }

// Close closes the connection.
func (r *Runtime) Close() error { return r.conn.Close() }

// IsNotFound reports whether err says the sandbox, container or image does
// not exist.
// status.Code looks through wrapping (%w).
func IsNotFound(err error) bool { return status.Code(err) == codes.NotFound }

// call runs fn with the per-call timeout plus extra, and names op and the
// object in its error.
func call[T any](ctx context.Context, r *Runtime, extra time.Duration, op, name string, fn func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout+extra)
	defer cancel()
	res, err := fn(ctx)
	if err != nil {
		return res, fmtErr(op, name, err)
	}
	return res, nil
}

func fmtErr(op, name string, err error) error {
	if name != "" {
		return fmt.Errorf("cri: %s %q: %w", op, name, err)
	}
	return fmt.Errorf("cri: %s: %w", op, err)
}
