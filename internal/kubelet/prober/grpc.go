package prober

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// probeGRPC asks the gRPC health service (grpc.health.v1.Health/Check) at
// addr about service (empty: the whole server), in plain text, within
// timeout; SERVING is success. The failure messages are upstream's.
func probeGRPC(ctx context.Context, addr, service string, timeout time.Duration) (outcome, string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// DialContext with WithBlock, as upstream, so that a server that does
	// not answer fails with upstream's "failed to connect" message.
	conn, err := grpc.DialContext(ctx, addr, //nolint:staticcheck // upstream's blocking dial
		grpc.WithUserAgent(userAgent),
		grpc.WithBlock(), //nolint:staticcheck
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return dialer().DialContext(ctx, "tcp", addr)
		}))
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return outcomeFailure, fmt.Sprintf("timeout: failed to connect service %q within %v: %+v", addr, timeout, err), nil
		}
		return outcomeFailure, fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err), nil
	}
	defer conn.Close()
	res, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		if s, ok := status.FromError(err); ok {
			switch s.Code() {
			case codes.Unimplemented:
				return outcomeFailure, fmt.Sprintf("error: this server does not implement the grpc health protocol (grpc.health.v1.Health): %s", s.Message()), nil
			case codes.DeadlineExceeded:
				return outcomeFailure, fmt.Sprintf("timeout: health rpc did not complete within %v", timeout), nil
			}
		}
		return outcomeFailure, fmt.Sprintf("error: health rpc probe failed: %+v", err), nil
	}
	if res.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return outcomeFailure, fmt.Sprintf("service unhealthy (responded with %q)", res.GetStatus().String()), nil
	}
	return outcomeSuccess, "service healthy", nil
}
