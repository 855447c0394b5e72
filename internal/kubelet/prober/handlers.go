package prober

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"orch/internal/kubelet/podconfig"
)

// maxRetries is how many times a handler that errored (rather than
// failed) is run before the error is reported, as upstream.
const maxRetries = 3

// maxOutput bounds the exec output and HTTP body a probe reads (10 KiB).
const maxOutput = 10 << 10

// target is what a handler needs to know about the probed container.
type target struct {
	container   *corev1.Container
	containerID string
	podIP       string
}

// run runs p's handler against t, again up to maxRetries times while it
// errors.
func (m *Manager) run(ctx context.Context, p *corev1.Probe, t target) (o outcome, output string, err error) {
	for range maxRetries {
		if o, output, err = m.runOnce(ctx, p, t); err == nil || ctx.Err() != nil {
			break
		}
	}
	return o, output, err
}

func (m *Manager) runOnce(ctx context.Context, p *corev1.Probe, t target) (outcome, string, error) {
	_, _, timeout := timing(p)
	switch {
	case p.Exec != nil:
		cmd := expandCommand(p.Exec.Command, t.container.Env)
		stdout, stderr, code, err := m.rt.ExecSync(ctx, t.containerID, cmd, timeout)
		return execOutcome(cmd, timeout, stdout, stderr, code, err)
	case p.HTTPGet != nil:
		req, err := newHTTPRequest(ctx, p.HTTPGet, t.container, t.podIP)
		if err != nil {
			return outcomeUnknown, "", err
		}
		return m.http.probe(req, timeout)
	case p.TCPSocket != nil:
		port, err := ResolvePort(p.TCPSocket.Port, t.container)
		if err != nil {
			return outcomeUnknown, "", err
		}
		host := p.TCPSocket.Host
		if host == "" {
			host = t.podIP
		}
		return probeTCP(ctx, net.JoinHostPort(host, strconv.Itoa(port)), timeout)
	case p.GRPC != nil:
		service := ""
		if p.GRPC.Service != nil {
			service = *p.GRPC.Service
		}
		return probeGRPC(ctx, net.JoinHostPort(t.podIP, strconv.Itoa(int(p.GRPC.Port))), service, timeout)
	}
	return outcomeUnknown, "", fmt.Errorf("missing probe handler for container %q", t.container.Name)
}

// expandCommand expands $(VAR) in an exec probe's command with the
// container's env values as written in the spec, as upstream: a valueFrom
// var expands to "", and the values themselves are not expanded.
func expandCommand(cmd []string, env []corev1.EnvVar) []string {
	vars := map[string]string{}
	for _, e := range env {
		vars[e.Name] = e.Value
	}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	out := make([]string, len(cmd))
	for i, s := range cmd {
		out[i] = podconfig.Expand(s, lookup)
	}
	return out
}

// execOutcome classifies what ExecSync returned: exit code 0 is success,
// another a failure with the command's output (stdout then stderr, at most
// 10 KiB); a timeout is a failure with upstream's "command timed out"
// message; any other error is unknown.
func execOutcome(cmd []string, timeout time.Duration, stdout, stderr []byte, code int32, err error) (outcome, string, error) {
	if err != nil {
		if status.Code(err) == codes.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded) {
			return outcomeFailure, fmt.Sprintf("command timed out: %q timed out after %s", strings.Join(cmd, " "), timeout), nil
		}
		return outcomeUnknown, "", err
	}
	out := append(append([]byte{}, stdout...), stderr...)
	if len(out) > maxOutput {
		out = out[:maxOutput]
	}
	if code != 0 {
		return outcomeFailure, string(out), nil
	}
	return outcomeSuccess, string(out), nil
}

// ResolvePort returns a port given by number, or by the name of one of
// c's ports (probes and lifecycle hooks name ports alike).
func ResolvePort(p intstr.IntOrString, c *corev1.Container) (int, error) {
	port := -1
	switch p.Type {
	case intstr.Int:
		port = p.IntValue()
	case intstr.String:
		found := false
		for _, cp := range c.Ports {
			if cp.Name == p.StrVal {
				port, found = int(cp.ContainerPort), true
				break
			}
		}
		if !found {
			return 0, fmt.Errorf("port %q not found", p.StrVal)
		}
	}
	if port <= 0 || port > 65535 {
		return port, fmt.Errorf("invalid port number: %v", port)
	}
	return port, nil
}

// dialer returns a dialer whose connections close with a 1 s linger, so
// that frequent probes do not pile up sockets in TIME_WAIT (as upstream).
func dialer() *net.Dialer {
	return &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) {
			_ = syscall.SetsockoptLinger(int(fd), syscall.SOL_SOCKET, syscall.SO_LINGER, &syscall.Linger{Onoff: 1, Linger: 1})
		})
	}}
}

// probeTCP succeeds when a TCP connection to addr opens within timeout.
func probeTCP(ctx context.Context, addr string, timeout time.Duration) (outcome, string, error) {
	d := dialer()
	d.Timeout = timeout
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return outcomeFailure, err.Error(), nil
	}
	_ = conn.Close()
	return outcomeSuccess, "", nil
}
