package cri

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Fake is an in-memory runtime with the same methods as Runtime, for the
// kubelet's unit tests. Sandboxes and containers move through the CRI states
// as containerd moves them (READY → NOTREADY; CREATED → RUNNING → EXITED);
// a container's image must be present (SetImage, PullImage) to create it;
// unknown IDs give gRPC NotFound errors, so IsNotFound works on both.
// Tests make containers exit with Exit, fail calls with FailNext, answer
// ExecSync with ExecFunc, and read the calls made with Calls.
type Fake struct {
	// Now is the fake's clock (time.Now when nil).
	Now func() time.Time
	// ExecFunc answers ExecSync (exit code 0 and no output when nil).
	ExecFunc func(id string, cmd []string) (stdout, stderr []byte, exitCode int32, err error)

	mu         sync.Mutex
	next       int
	calls      []string
	failures   map[string]error
	sandboxes  map[string]*runtimeapi.PodSandboxStatus
	sbConfigs  map[string]*runtimeapi.PodSandboxConfig
	containers map[string]*fakeContainer
	images     map[string]*runtimeapi.Image
	podCIDR    string
}

type fakeContainer struct {
	sandboxID string
	status    *runtimeapi.ContainerStatus
	config    *runtimeapi.ContainerConfig
}

// NewFake returns an empty fake runtime.
func NewFake() *Fake {
	return &Fake{
		failures:   map[string]error{},
		sandboxes:  map[string]*runtimeapi.PodSandboxStatus{},
		sbConfigs:  map[string]*runtimeapi.PodSandboxConfig{},
		containers: map[string]*fakeContainer{},
		images:     map[string]*runtimeapi.Image{},
	}
}

// SetImage makes ref present, with the given size and pinned flag.
func (f *Fake) SetImage(ref string, size uint64, pinned bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.images[ref] = &runtimeapi.Image{Id: "sha256:" + ref, RepoTags: []string{ref}, Size: size, Pinned: pinned}
}

// ContainerConfig is the config container id was created with, or nil.
func (f *Fake) ContainerConfig(id string) *runtimeapi.ContainerConfig {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.containers[id]; ok {
		return clone(c.config)
	}
	return nil
}

// FailNext makes the next call of method (e.g. "StartContainer") return err.
func (f *Fake) FailNext(method string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures[method] = err
}

// Exit makes a running container exit with code and reason (e.g. "OOMKilled").
func (f *Fake) Exit(id string, code int32, reason string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[id]
	if !ok {
		return notFound("container", id)
	}
	c.status.State = runtimeapi.ContainerState_CONTAINER_EXITED
	c.status.ExitCode, c.status.Reason, c.status.FinishedAt = code, reason, f.now().UnixNano()
	return nil
}

// Calls returns the methods called so far, as "Method" or "Method id".
func (f *Fake) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *Fake) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

// begin records a call and returns the failure queued for it, if any.
// f.mu must be held.
func (f *Fake) begin(method, id string) error {
	if id != "" {
		f.calls = append(f.calls, method+" "+id)
	} else {
		f.calls = append(f.calls, method)
	}
	if err, ok := f.failures[method]; ok {
		delete(f.failures, method)
		return fmtErr(method, id, err)
	}
	return nil
}

func (f *Fake) newID(prefix string) string {
	f.next++
	return fmt.Sprintf("%s%06d", prefix, f.next)
}

func notFound(kind, id string) error {
	return status.Errorf(codes.NotFound, "%s %q not found", kind, id)
}

// Close implements Runtime.Close.
func (f *Fake) Close() error { return nil }

// Version implements Runtime.Version.
func (f *Fake) Version(ctx context.Context) (*runtimeapi.VersionResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("Version", ""); err != nil {
		return nil, err
	}
	return &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: "fake", RuntimeVersion: "0.0.0", RuntimeApiVersion: APIVersion}, nil
}

// Status implements Runtime.Status: the runtime is ready, and the network
// is ready once UpdateRuntimeConfig gave a pod CIDR.
func (f *Fake) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("Status", ""); err != nil {
		return nil, err
	}
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true},
		{Type: runtimeapi.NetworkReady, Status: f.podCIDR != ""},
	}}}, nil
}

// UpdateRuntimeConfig implements Runtime.UpdateRuntimeConfig.
func (f *Fake) UpdateRuntimeConfig(ctx context.Context, podCIDR string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("UpdateRuntimeConfig", podCIDR); err != nil {
		return err
	}
	f.podCIDR = podCIDR
	return nil
}

// RunPodSandbox implements Runtime.RunPodSandbox.
func (f *Fake) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("RunPodSandbox", sandboxName(config)); err != nil {
		return "", err
	}
	if config.GetMetadata() == nil {
		return "", status.Error(codes.InvalidArgument, "sandbox config must include metadata")
	}
	id := f.newID("sandbox")
	f.sandboxes[id] = &runtimeapi.PodSandboxStatus{
		Id: id, Metadata: config.Metadata, State: runtimeapi.PodSandboxState_SANDBOX_READY,
		CreatedAt: f.now().UnixNano(), Labels: config.Labels, Annotations: config.Annotations,
		RuntimeHandler: runtimeHandler,
	}
	f.sbConfigs[id] = config
	return id, nil
}

// StopPodSandbox implements Runtime.StopPodSandbox: its containers exit.
func (f *Fake) StopPodSandbox(ctx context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("StopPodSandbox", id); err != nil {
		return err
	}
	sb, ok := f.sandboxes[id]
	if !ok {
		return notFound("sandbox", id)
	}
	for _, c := range f.containers {
		if c.sandboxID == id {
			f.stop(c, 137)
		}
	}
	sb.State = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	return nil
}

// RemovePodSandbox implements Runtime.RemovePodSandbox.
func (f *Fake) RemovePodSandbox(ctx context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("RemovePodSandbox", id); err != nil {
		return err
	}
	sb, ok := f.sandboxes[id]
	if !ok {
		return nil // removing what is gone succeeds, as in containerd
	}
	if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
		return status.Errorf(codes.FailedPrecondition, "sandbox %q is not stopped", id)
	}
	for cid, c := range f.containers {
		if c.sandboxID == id {
			delete(f.containers, cid)
		}
	}
	delete(f.sandboxes, id)
	delete(f.sbConfigs, id)
	return nil
}

// PodSandboxStatus implements Runtime.PodSandboxStatus.
func (f *Fake) PodSandboxStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("PodSandboxStatus", id); err != nil {
		return nil, err
	}
	sb, ok := f.sandboxes[id]
	if !ok {
		return nil, notFound("sandbox", id)
	}
	return &runtimeapi.PodSandboxStatusResponse{Status: clone(sb)}, nil
}

// ListPodSandbox implements Runtime.ListPodSandbox.
func (f *Fake) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("ListPodSandbox", ""); err != nil {
		return nil, err
	}
	var out []*runtimeapi.PodSandbox
	for _, id := range sortedKeys(f.sandboxes) {
		sb := f.sandboxes[id]
		if filter != nil && (filter.Id != "" && filter.Id != id ||
			filter.State != nil && filter.State.State != sb.State || !labelsMatch(sb.Labels, filter.LabelSelector)) {
			continue
		}
		out = append(out, &runtimeapi.PodSandbox{Id: id, Metadata: sb.Metadata, State: sb.State, CreatedAt: sb.CreatedAt,
			Labels: sb.Labels, Annotations: sb.Annotations, RuntimeHandler: sb.RuntimeHandler})
	}
	return out, nil
}

// CreateContainer implements Runtime.CreateContainer.
func (f *Fake) CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("CreateContainer", podSandboxID); err != nil {
		return "", err
	}
	sb, ok := f.sandboxes[podSandboxID]
	if !ok {
		return "", notFound("sandbox", podSandboxID)
	}
	if sb.State != runtimeapi.PodSandboxState_SANDBOX_READY {
		return "", status.Errorf(codes.FailedPrecondition, "sandbox %q is not ready", podSandboxID)
	}
	if config.GetMetadata() == nil || config.Image == nil {
		return "", status.Error(codes.InvalidArgument, "container config must include metadata and image")
	}
	img := f.findImage(config.Image.Image)
	if img == nil {
		return "", status.Errorf(codes.NotFound, "image %q not found", config.Image.Image)
	}
	id := f.newID("container")
	logPath := ""
	if config.LogPath != "" && sandboxConfig.GetLogDirectory() != "" {
		logPath = sandboxConfig.LogDirectory + "/" + config.LogPath
	}
	f.containers[id] = &fakeContainer{sandboxID: podSandboxID, status: &runtimeapi.ContainerStatus{
		Id: id, Metadata: config.Metadata, State: runtimeapi.ContainerState_CONTAINER_CREATED,
		CreatedAt: f.now().UnixNano(), Image: config.Image, ImageRef: img.Id, ImageId: img.Id,
		Labels: config.Labels, Annotations: config.Annotations, LogPath: logPath, Mounts: config.Mounts,
	}, config: clone(config)}
	return id, nil
}

// StartContainer implements Runtime.StartContainer.
func (f *Fake) StartContainer(ctx context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("StartContainer", id); err != nil {
		return err
	}
	c, ok := f.containers[id]
	if !ok {
		return notFound("container", id)
	}
	if c.status.State != runtimeapi.ContainerState_CONTAINER_CREATED {
		return status.Errorf(codes.FailedPrecondition, "container %q is in state %s, not CREATED", id, c.status.State)
	}
	c.status.State, c.status.StartedAt = runtimeapi.ContainerState_CONTAINER_RUNNING, f.now().UnixNano()
	return nil
}

// StopContainer implements Runtime.StopContainer: a running container exits
// with 137 (killed), as a process that ignores SIGTERM would.
func (f *Fake) StopContainer(ctx context.Context, id string, timeout int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("StopContainer", id); err != nil {
		return err
	}
	c, ok := f.containers[id]
	if !ok {
		return notFound("container", id)
	}
	f.stop(c, 137)
	return nil
}

func (f *Fake) stop(c *fakeContainer, code int32) {
	if c.status.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
		c.status.State, c.status.ExitCode, c.status.FinishedAt = runtimeapi.ContainerState_CONTAINER_EXITED, code, f.now().UnixNano()
		c.status.Reason = "Error"
	}
}

// RemoveContainer implements Runtime.RemoveContainer.
func (f *Fake) RemoveContainer(ctx context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("RemoveContainer", id); err != nil {
		return err
	}
	delete(f.containers, id)
	return nil
}

// ListContainers implements Runtime.ListContainers.
func (f *Fake) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("ListContainers", ""); err != nil {
		return nil, err
	}
	var out []*runtimeapi.Container
	for _, id := range sortedKeys(f.containers) {
		c := f.containers[id]
		s := c.status
		if filter != nil && (filter.Id != "" && filter.Id != id || filter.PodSandboxId != "" && filter.PodSandboxId != c.sandboxID ||
			filter.State != nil && filter.State.State != s.State || !labelsMatch(s.Labels, filter.LabelSelector)) {
			continue
		}
		out = append(out, &runtimeapi.Container{Id: id, PodSandboxId: c.sandboxID, Metadata: s.Metadata, Image: s.Image,
			ImageRef: s.ImageRef, ImageId: s.ImageId, State: s.State, CreatedAt: s.CreatedAt, Labels: s.Labels, Annotations: s.Annotations})
	}
	return out, nil
}

// ContainerStatus implements Runtime.ContainerStatus.
func (f *Fake) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("ContainerStatus", id); err != nil {
		return nil, err
	}
	c, ok := f.containers[id]
	if !ok {
		return nil, notFound("container", id)
	}
	return &runtimeapi.ContainerStatusResponse{Status: clone(c.status)}, nil
}

// UpdateContainerResources implements Runtime.UpdateContainerResources.
func (f *Fake) UpdateContainerResources(ctx context.Context, id string, resources *runtimeapi.LinuxContainerResources) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("UpdateContainerResources", id); err != nil {
		return err
	}
	c, ok := f.containers[id]
	if !ok {
		return notFound("container", id)
	}
	c.status.Resources = &runtimeapi.ContainerResources{Linux: resources}
	return nil
}

// ReopenContainerLog implements Runtime.ReopenContainerLog.
func (f *Fake) ReopenContainerLog(ctx context.Context, id string) error {
	return f.existing("ReopenContainerLog", id)
}

func (f *Fake) existing(method, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin(method, id); err != nil {
		return err
	}
	if _, ok := f.containers[id]; !ok {
		return notFound("container", id)
	}
	return nil
}

// ExecSync implements Runtime.ExecSync through ExecFunc; the container must
// be running.
func (f *Fake) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, int32, error) {
	f.mu.Lock()
	if err := f.begin("ExecSync", id); err != nil {
		f.mu.Unlock()
		return nil, nil, 0, err
	}
	c, ok := f.containers[id]
	running := ok && c.status.State == runtimeapi.ContainerState_CONTAINER_RUNNING
	exec := f.ExecFunc
	f.mu.Unlock()
	if !ok {
		return nil, nil, 0, notFound("container", id)
	}
	if !running {
		return nil, nil, 0, status.Errorf(codes.FailedPrecondition, "container %q is not running", id)
	}
	if exec == nil {
		return nil, nil, 0, nil
	}
	return exec(id, cmd)
}

// Exec implements Runtime.Exec with a made-up URL.
func (f *Fake) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	if err := f.existing("Exec", req.GetContainerId()); err != nil {
		return nil, err
	}
	return &runtimeapi.ExecResponse{Url: "http://127.0.0.1:0/exec/" + req.ContainerId}, nil
}

// Attach implements Runtime.Attach with a made-up URL.
func (f *Fake) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	if err := f.existing("Attach", req.GetContainerId()); err != nil {
		return nil, err
	}
	return &runtimeapi.AttachResponse{Url: "http://127.0.0.1:0/attach/" + req.ContainerId}, nil
}

// PortForward implements Runtime.PortForward with a made-up URL.
func (f *Fake) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("PortForward", req.GetPodSandboxId()); err != nil {
		return nil, err
	}
	if _, ok := f.sandboxes[req.GetPodSandboxId()]; !ok {
		return nil, notFound("sandbox", req.GetPodSandboxId())
	}
	return &runtimeapi.PortForwardResponse{Url: "http://127.0.0.1:0/portforward/" + req.PodSandboxId}, nil
}

// ContainerStats implements Runtime.ContainerStats with zero usage.
func (f *Fake) ContainerStats(ctx context.Context, id string) (*runtimeapi.ContainerStats, error) {
	if err := f.existing("ContainerStats", id); err != nil {
		return nil, err
	}
	return &runtimeapi.ContainerStats{Attributes: &runtimeapi.ContainerAttributes{Id: id}}, nil
}

// ListContainerStats implements Runtime.ListContainerStats with zero usage.
func (f *Fake) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("ListContainerStats", ""); err != nil {
		return nil, err
	}
	var out []*runtimeapi.ContainerStats
	for _, id := range sortedKeys(f.containers) {
		c := f.containers[id]
		if filter != nil && (filter.Id != "" && filter.Id != id || filter.PodSandboxId != "" && filter.PodSandboxId != c.sandboxID) {
			continue
		}
		out = append(out, &runtimeapi.ContainerStats{Attributes: &runtimeapi.ContainerAttributes{Id: id, Metadata: c.status.Metadata, Labels: c.status.Labels}})
	}
	return out, nil
}

// ListPodSandboxStats implements Runtime.ListPodSandboxStats with zero usage.
func (f *Fake) ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("ListPodSandboxStats", ""); err != nil {
		return nil, err
	}
	var out []*runtimeapi.PodSandboxStats
	for _, id := range sortedKeys(f.sandboxes) {
		if filter != nil && filter.Id != "" && filter.Id != id {
			continue
		}
		out = append(out, &runtimeapi.PodSandboxStats{Attributes: &runtimeapi.PodSandboxAttributes{Id: id, Metadata: f.sandboxes[id].Metadata}})
	}
	return out, nil
}

func clone[T proto.Message](m T) T { return proto.Clone(m).(T) }

func labelsMatch(labels, selector map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
