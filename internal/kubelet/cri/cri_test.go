package cri

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestFakeHasTheMethodsOfRuntime keeps Fake a drop-in for Runtime: every
// exported method of *Runtime exists on *Fake with the same signature,
// except the two that only make sense for a real connection.
func TestFakeHasTheMethodsOfRuntime(t *testing.T) {
	real, fake := reflect.TypeOf((*Runtime)(nil)), reflect.TypeOf((*Fake)(nil))
	connectionOnly := map[string]bool{"Endpoint": true, "RuntimeVersion": true}
	n := 0
	for i := 0; i < real.NumMethod(); i++ {
		m := real.Method(i)
		if connectionOnly[m.Name] {
			continue
		}
		n++
		fm, ok := fake.MethodByName(m.Name)
		if !ok {
			t.Errorf("Fake has no method %s%s", m.Name, strings.TrimPrefix(m.Type.String(), "func(*cri.Runtime"))
			continue
		}
		// Compare without the receiver.
		if got, want := funcType(fm.Type), funcType(m.Type); got != want {
			t.Errorf("Fake.%s is %s, Runtime.%s is %s", m.Name, got, m.Name, want)
		}
	}
	if n < 25 {
		t.Fatalf("only %d methods compared; the reflection is wrong", n)
	}
}

// runtimeService is what both implement; a kubelet interface is a subset.
type runtimeService interface {
	RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error)
	CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
	StartContainer(ctx context.Context, id string) error
	ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
	ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, int32, error)
	ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error)
}

var (
	_ runtimeService = (*Runtime)(nil)
	_ runtimeService = (*Fake)(nil)
)

func funcType(t reflect.Type) string {
	var in, out []string
	for i := 1; i < t.NumIn(); i++ {
		in = append(in, t.In(i).String())
	}
	for i := 0; i < t.NumOut(); i++ {
		out = append(out, t.Out(i).String())
	}
	return "(" + strings.Join(in, ", ") + ") (" + strings.Join(out, ", ") + ")"
}

func TestSocketPath(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{in: "/run/orch/containerd/containerd.sock", want: "/run/orch/containerd/containerd.sock"},
		{in: "unix:///run/containerd/containerd.sock", want: "/run/containerd/containerd.sock"},
		{in: "unix:///run//x/../c.sock", want: "/run/c.sock"},
		{in: "tcp://127.0.0.1:1234", err: "only unix sockets"},
		{in: "run/c.sock", err: "absolute socket path"},
		{in: "", err: "absolute socket path"},
	} {
		got, err := SocketPath(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("SocketPath(%q) = %q, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("SocketPath(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// versionServer answers Version with a chosen API version.
type versionServer struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	apiVersion string
}

func (s versionServer) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{RuntimeName: "test", RuntimeVersion: "1", RuntimeApiVersion: s.apiVersion}, nil
}

func (s versionServer) StartContainer(_ context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	time.Sleep(time.Second)
	return &runtimeapi.StartContainerResponse{}, nil
}

// serve runs a gRPC server on a socket in a temp dir; register adds services.
func serve(t *testing.T, register func(*grpc.Server)) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "cri.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	register(srv)
	go srv.Serve(l)
	t.Cleanup(srv.Stop)
	return sock
}

func TestConnectChecksTheVersion(t *testing.T) {
	ctx := context.Background()
	good := serve(t, func(s *grpc.Server) { runtimeapi.RegisterRuntimeServiceServer(s, versionServer{apiVersion: "v1"}) })
	r, err := Connect(ctx, "unix://"+good, WithTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatalf("Connect to a v1 runtime: %v", err)
	}
	if r.RuntimeVersion().RuntimeName != "test" {
		t.Errorf("version %v", r.RuntimeVersion())
	}
	// The per-call timeout bounds a slow call, and the error names the call.
	err = r.StartContainer(ctx, "c1")
	if err == nil || !strings.Contains(err.Error(), `StartContainer "c1"`) || !strings.Contains(err.Error(), "DeadlineExceeded") {
		t.Errorf("slow StartContainer: %v", err)
	}
	// Unimplemented methods pass through as errors, not as panics or nils.
	if _, err := r.ContainerStatus(ctx, "c1", false); err == nil || IsNotFound(err) {
		t.Errorf("ContainerStatus on an unimplemented server: %v", err)
	}
	r.Close()

	old := serve(t, func(s *grpc.Server) {
		runtimeapi.RegisterRuntimeServiceServer(s, versionServer{apiVersion: "v1alpha2"})
	})
	if _, err := Connect(ctx, old); !errors.Is(err, ErrRuntimeVersion) || !strings.Contains(err.Error(), `"v1alpha2"`) {
		t.Errorf("Connect to a v1alpha2 runtime: %v", err)
	}

	none := serve(t, func(*grpc.Server) {})
	if _, err := Connect(ctx, none); !errors.Is(err, ErrRuntimeVersion) || !strings.Contains(err.Error(), "does not serve the CRI v1 API") {
		t.Errorf("Connect to a server without CRI: %v", err)
	}

	missing := filepath.Join(t.TempDir(), "nothing.sock")
	if _, err := Connect(ctx, missing, WithTimeout(time.Second)); err == nil || !strings.Contains(err.Error(), "no container runtime answers") {
		t.Errorf("Connect to a missing socket: %v", err)
	}
}

func TestFakeLifecycle(t *testing.T) {
	ctx := context.Background()
	f := NewFake()
	sbConfig := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "default", Uid: "u"}, LogDirectory: "/logs"}
	sb, err := f.RunPodSandbox(ctx, sbConfig, "")
	if err != nil {
		t.Fatal(err)
	}
	config := &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: "busybox:1"}, LogPath: "c/0.log"}
	if _, err := f.CreateContainer(ctx, sb, config, sbConfig); !IsNotFound(err) {
		t.Fatalf("CreateContainer without the image: %v, want NotFound", err)
	}
	if _, err := f.PullImage(ctx, &runtimeapi.ImageSpec{Image: "busybox:1"}, nil, sbConfig); err != nil {
		t.Fatal(err)
	}
	id, err := f.CreateContainer(ctx, sb, config, sbConfig)
	if err != nil {
		t.Fatal(err)
	}
	f.FailNext("StartContainer", errors.New("boom"))
	if err := f.StartContainer(ctx, id); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("injected failure: %v", err)
	}
	if err := f.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	st, err := f.ContainerStatus(ctx, id, false)
	if err != nil || st.Status.State != runtimeapi.ContainerState_CONTAINER_RUNNING || st.Status.LogPath != "/logs/c/0.log" {
		t.Fatalf("status %v, %v", st, err)
	}
	f.ExecFunc = func(id string, cmd []string) ([]byte, []byte, int32, error) {
		return []byte(strings.Join(cmd, " ")), nil, 3, nil
	}
	if out, _, code, err := f.ExecSync(ctx, id, []string{"echo", "hi"}, time.Second); err != nil || string(out) != "echo hi" || code != 3 {
		t.Errorf("ExecSync = %q, %d, %v", out, code, err)
	}
	if err := f.Exit(id, 1, "Error"); err != nil {
		t.Fatal(err)
	}
	if list, _ := f.ListContainers(ctx, &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_EXITED}}); len(list) != 1 {
		t.Errorf("exited containers: %v", list)
	}
	if err := f.RemovePodSandbox(ctx, sb); err == nil {
		t.Error("removed a ready sandbox")
	}
	if err := f.StopPodSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	if err := f.RemovePodSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ContainerStatus(ctx, id, false); !IsNotFound(err) {
		t.Errorf("container of a removed sandbox: %v", err)
	}
	if calls := f.Calls(); len(calls) != 13 || calls[0] != "RunPodSandbox default/p" {
		t.Errorf("calls %q", calls)
	}
}
