package prober

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"
)

func TestExecOutcome(t *testing.T) {
	cmd := []string{"sh", "-c", "sleep 5"}
	long := strings.Repeat("x", maxOutput+100)
	tests := []struct {
		name           string
		stdout, stderr string
		code           int32
		err            error
		want           outcome
		output         string
		wantErr        bool
	}{
		{"exit 0", "fine\n", "", 0, nil, outcomeSuccess, "fine\n", false},
		{"exit 1: stdout then stderr", "out;", "err", 1, nil, outcomeFailure, "out;err", false},
		{"output is cut at 10 KiB", long, "", 2, nil, outcomeFailure, long[:maxOutput], false},
		{"CRI deadline", "", "", 0, fmt.Errorf("cri: ExecSync \"c1\": %w", status.Error(codes.DeadlineExceeded, "timeout 1s exceeded")),
			outcomeFailure, `command timed out: "sh -c sleep 5" timed out after 1s`, false},
		{"context deadline", "", "", 0, fmt.Errorf("cri: %w", context.DeadlineExceeded),
			outcomeFailure, `command timed out: "sh -c sleep 5" timed out after 1s`, false},
		{"container gone", "", "", 0, status.Error(codes.NotFound, "no such container"), outcomeUnknown, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, out, err := execOutcome(cmd, time.Second, []byte(tt.stdout), []byte(tt.stderr), tt.code, tt.err)
			if o != tt.want || out != tt.output || (err != nil) != tt.wantErr {
				t.Errorf("execOutcome = %v, %q, %v; want %v, %q, error %v", o, out, err, tt.want, tt.output, tt.wantErr)
			}
		})
	}
}

func TestExpandCommand(t *testing.T) {
	env := []corev1.EnvVar{
		{Name: "PORT", Value: "8080"},
		{Name: "REF", Value: "$(PORT)"},
		{Name: "SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}},
	}
	got := expandCommand([]string{"check", "--port=$(PORT)", "$(REF)", "[$(SECRET)]", "$(MISSING)", "$$(PORT)"}, env)
	want := []string{"check", "--port=8080", "$(PORT)", "[]", "$(MISSING)", "$(PORT)"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("expandCommand = %q, want %q", got, want)
	}
}

func TestResolvePort(t *testing.T) {
	c := &corev1.Container{Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "zero"}}}
	tests := []struct {
		port    intstr.IntOrString
		want    int
		wantErr string
	}{
		{intstr.FromInt32(80), 80, ""},
		{intstr.FromString("http"), 8080, ""},
		{intstr.FromString("grpc"), 0, `port "grpc" not found`},
		{intstr.FromInt32(0), 0, "invalid port number: 0"},
		{intstr.FromInt32(70000), 0, "invalid port number: 70000"},
		{intstr.FromString("zero"), 0, "invalid port number: 0"},
	}
	for _, tt := range tests {
		got, err := ResolvePort(tt.port, c)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("ResolvePort(%v) error = %v, want %q", tt.port.String(), err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ResolvePort(%v) = %d, %v; want %d", tt.port.String(), got, err, tt.want)
		}
	}
}

// runOnce runs p against a container on 127.0.0.1 through a Manager whose
// runtime is rt.
func runOnce(t *testing.T, rt Runtime, p *corev1.Probe, c *corev1.Container) (outcome, string, error) {
	t.Helper()
	if c == nil {
		c = &corev1.Container{Name: "app"}
	}
	m := newManager(rt, nil, nil, nil, clock.RealClock{})
	return m.run(context.Background(), p, target{container: c, containerID: "c1", podIP: "127.0.0.1"})
}

func TestExecProbe(t *testing.T) {
	rt := &fakeRuntime{fn: func(_ context.Context, id string, cmd []string) ([]byte, []byte, int32, error) {
		switch {
		case id != "c1":
			return nil, nil, 0, fmt.Errorf("wrong container %q", id)
		case cmd[0] == "ok":
			return []byte("ok"), nil, 0, nil
		case cmd[0] == "gone":
			return nil, nil, 0, status.Error(codes.NotFound, "container not found")
		}
		return nil, []byte("sad"), 1, nil
	}}
	exec := func(cmd ...string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: cmd}}}
	}
	if o, out, err := runOnce(t, rt, exec("ok"), nil); o != outcomeSuccess || out != "ok" || err != nil {
		t.Errorf("exec ok = %v, %q, %v", o, out, err)
	}
	if o, out, err := runOnce(t, rt, exec("bad"), nil); o != outcomeFailure || out != "sad" || err != nil {
		t.Errorf("exec bad = %v, %q, %v", o, out, err)
	}
	o, _, err := runOnce(t, rt, exec("gone"), nil)
	if o != outcomeUnknown || err == nil || rt.count("gone") != maxRetries {
		t.Errorf("exec gone = %v, %v after %d calls; want unknown, an error, after %d calls", o, err, rt.count("gone"), maxRetries)
	}
}

func TestTCPProbe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	c := &corev1.Container{Name: "app", Ports: []corev1.ContainerPort{{Name: "svc", ContainerPort: int32(port)}}}
	tcp := func(p intstr.IntOrString, host string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: p, Host: host}}}
	}
	if o, out, err := runOnce(t, nil, tcp(intstr.FromInt32(int32(port)), ""), c); o != outcomeSuccess || err != nil {
		t.Errorf("tcp by number = %v, %q, %v", o, out, err)
	}
	if o, out, err := runOnce(t, nil, tcp(intstr.FromString("svc"), "localhost"), c); o != outcomeSuccess || err != nil {
		t.Errorf("tcp by name to localhost = %v, %q, %v", o, out, err)
	}
	// A port nobody listens on: take one and close it.
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	cport := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	o, out, err := runOnce(t, nil, tcp(intstr.FromInt32(int32(cport)), ""), c)
	if o != outcomeFailure || err != nil || !strings.Contains(out, "connection refused") {
		t.Errorf("tcp to a closed port = %v, %q, %v; want failure, connection refused", o, out, err)
	}
	if o, _, err := runOnce(t, nil, tcp(intstr.FromString("nope"), ""), c); o != outcomeUnknown || err == nil || err.Error() != `port "nope" not found` {
		t.Errorf("tcp unknown port name = %v, %v", o, err)
	}
}

func TestGRPCProbe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("db", healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	go srv.Serve(ln)
	defer srv.Stop()
	port := int32(ln.Addr().(*net.TCPAddr).Port)

	// A gRPC server without the health service.
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	bare := grpc.NewServer()
	go bare.Serve(ln2)
	defer bare.Stop()
	barePort := int32(ln2.Addr().(*net.TCPAddr).Port)

	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedPort := int32(closed.Addr().(*net.TCPAddr).Port)
	closed.Close()

	probe := func(port int32, service *string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: port, Service: service}}, TimeoutSeconds: 1}
	}
	str := func(s string) *string { return &s }
	tests := []struct {
		name string
		p    *corev1.Probe
		want outcome
		msg  string // a prefix of the output
	}{
		{"server serving", probe(port, nil), outcomeSuccess, "service healthy"},
		{"empty service name", probe(port, str("")), outcomeSuccess, "service healthy"},
		{"service not serving", probe(port, str("db")), outcomeFailure, `service unhealthy (responded with "NOT_SERVING")`},
		{"unknown service", probe(port, str("nope")), outcomeFailure, "error: health rpc probe failed: rpc error: code = NotFound"},
		{"no health service", probe(barePort, nil), outcomeFailure,
			"error: this server does not implement the grpc health protocol (grpc.health.v1.Health): "},
		{"nothing listens", probe(closedPort, nil), outcomeFailure,
			fmt.Sprintf(`timeout: failed to connect service "127.0.0.1:%d" within 1s: context deadline exceeded`, closedPort)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, out, err := runOnce(t, nil, tt.p, nil)
			if o != tt.want || err != nil || !strings.HasPrefix(out, tt.msg) {
				t.Errorf("grpc probe = %v, %q, %v; want %v, %q…", o, out, err, tt.want, tt.msg)
			}
		})
	}
}
