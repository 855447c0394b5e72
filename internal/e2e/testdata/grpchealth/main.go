// Command grpchealth is the gRPC health server of the e2e tests' grpc
// probes (internal/e2e/podspec_test.go builds it into an image): it serves
// grpc.health.v1.Health on the port of its first argument, the whole
// server ("") SERVING and the service "sick" NOT_SERVING.
package main

import (
	"fmt"
	"net"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: grpchealth PORT")
		os.Exit(2)
	}
	l, err := net.Listen("tcp", ":"+os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("sick", healthpb.HealthCheckResponse_NOT_SERVING)
	s := grpc.NewServer()
	healthpb.RegisterHealthServer(s, hs)
	fmt.Println("serving grpc.health.v1.Health on", l.Addr())
	if err := s.Serve(l); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
