package cri

import (
	"context"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Version asks the runtime its name and versions.
func (r *Runtime) Version(ctx context.Context) (*runtimeapi.VersionResponse, error) {
	return call(ctx, r, 0, "Version", "", func(ctx context.Context) (*runtimeapi.VersionResponse, error) {
		return r.runtime.Version(ctx, &runtimeapi.VersionRequest{Version: APIVersion})
	})
}

// Status returns the runtime's conditions (RuntimeReady, NetworkReady).
func (r *Runtime) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	return call(ctx, r, 0, "Status", "", func(ctx context.Context) (*runtimeapi.StatusResponse, error) {
		return r.runtime.Status(ctx, &runtimeapi.StatusRequest{Verbose: verbose})
	})
}

// UpdateRuntimeConfig tells the runtime the node's pod CIDR.
func (r *Runtime) UpdateRuntimeConfig(ctx context.Context, podCIDR string) error {
	_, err := call(ctx, r, 0, "UpdateRuntimeConfig", podCIDR, func(ctx context.Context) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
		return r.runtime.UpdateRuntimeConfig(ctx, &runtimeapi.UpdateRuntimeConfigRequest{
			RuntimeConfig: &runtimeapi.RuntimeConfig{NetworkConfig: &runtimeapi.NetworkConfig{PodCidr: podCIDR}}})
	})
	return err
}

// RunPodSandbox creates and starts a pod sandbox and returns its ID.
func (r *Runtime) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error) {
	res, err := call(ctx, r, 0, "RunPodSandbox", sandboxName(config), func(ctx context.Context) (*runtimeapi.RunPodSandboxResponse, error) {
		return r.runtime.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: config, RuntimeHandler: runtimeHandler})
	})
	if err != nil {
		return "", err
	}
	return res.PodSandboxId, nil
}

// StopPodSandbox stops a sandbox's containers and tears down its network.
func (r *Runtime) StopPodSandbox(ctx context.Context, id string) error {
	_, err := call(ctx, r, 0, "StopPodSandbox", id, func(ctx context.Context) (*runtimeapi.StopPodSandboxResponse, error) {
		return r.runtime.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id})
	})
	return err
}

// RemovePodSandbox removes a sandbox and its containers.
func (r *Runtime) RemovePodSandbox(ctx context.Context, id string) error {
	_, err := call(ctx, r, 0, "RemovePodSandbox", id, func(ctx context.Context) (*runtimeapi.RemovePodSandboxResponse, error) {
		return r.runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
	})
	return err
}

// PodSandboxStatus returns a sandbox's status (and, verbose, runtime details).
func (r *Runtime) PodSandboxStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	return call(ctx, r, 0, "PodSandboxStatus", id, func(ctx context.Context) (*runtimeapi.PodSandboxStatusResponse, error) {
		return r.runtime.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: verbose})
	})
}

// ListPodSandbox lists the sandboxes that match filter (all when nil).
func (r *Runtime) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	res, err := call(ctx, r, 0, "ListPodSandbox", "", func(ctx context.Context) (*runtimeapi.ListPodSandboxResponse, error) {
		return r.runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: filter})
	})
	if err != nil {
		return nil, err
	}
	return res.Items, nil
}

// CreateContainer creates a container in a sandbox and returns its ID.
func (r *Runtime) CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	name := podSandboxID
	if config != nil && config.Metadata != nil {
		name = podSandboxID + "/" + config.Metadata.Name
	}
	res, err := call(ctx, r, 0, "CreateContainer", name, func(ctx context.Context) (*runtimeapi.CreateContainerResponse, error) {
		return r.runtime.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: podSandboxID, Config: config, SandboxConfig: sandboxConfig})
	})
	if err != nil {
		return "", err
	}
	return res.ContainerId, nil
}

// StartContainer starts a created container.
func (r *Runtime) StartContainer(ctx context.Context, id string) error {
	_, err := call(ctx, r, 0, "StartContainer", id, func(ctx context.Context) (*runtimeapi.StartContainerResponse, error) {
		return r.runtime.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id})
	})
	return err
}

// StopContainer stops a container: SIGTERM (or the image's stop signal),
// then SIGKILL after timeout seconds. The call may take that long, so its
// deadline is the per-call timeout plus timeout.
func (r *Runtime) StopContainer(ctx context.Context, id string, timeout int64) error {
	_, err := call(ctx, r, time.Duration(timeout)*time.Second, "StopContainer", id, func(ctx context.Context) (*runtimeapi.StopContainerResponse, error) {
		return r.runtime.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: timeout})
	})
	return err
}

// RemoveContainer removes a container (stopping it first if needed).
func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	_, err := call(ctx, r, 0, "RemoveContainer", id, func(ctx context.Context) (*runtimeapi.RemoveContainerResponse, error) {
		return r.runtime.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id})
	})
	return err
}

// ListContainers lists the containers that match filter (all when nil).
func (r *Runtime) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	res, err := call(ctx, r, 0, "ListContainers", "", func(ctx context.Context) (*runtimeapi.ListContainersResponse, error) {
		return r.runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: filter})
	})
	if err != nil {
		return nil, err
	}
	return res.Containers, nil
}

// ContainerStatus returns a container's status (and, verbose, runtime details).
func (r *Runtime) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	return call(ctx, r, 0, "ContainerStatus", id, func(ctx context.Context) (*runtimeapi.ContainerStatusResponse, error) {
		return r.runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: verbose})
	})
}

// UpdateContainerResources changes a running container's cgroup limits.
func (r *Runtime) UpdateContainerResources(ctx context.Context, id string, resources *runtimeapi.LinuxContainerResources) error {
	_, err := call(ctx, r, 0, "UpdateContainerResources", id, func(ctx context.Context) (*runtimeapi.UpdateContainerResourcesResponse, error) {
		return r.runtime.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: id, Linux: resources})
	})
	return err
}

// ReopenContainerLog makes the runtime reopen a container's log file (after
// the kubelet rotated it).
func (r *Runtime) ReopenContainerLog(ctx context.Context, id string) error {
	_, err := call(ctx, r, 0, "ReopenContainerLog", id, func(ctx context.Context) (*runtimeapi.ReopenContainerLogResponse, error) {
		return r.runtime.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: id})
	})
	return err
}

// ExecSync runs cmd in a container and returns its output and exit code.
// timeout bounds the command (0: no bound but the per-call timeout); the
// call's deadline is the per-call timeout plus timeout.
func (r *Runtime) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (stdout, stderr []byte, exitCode int32, err error) {
	res, err := call(ctx, r, timeout, "ExecSync", id, func(ctx context.Context) (*runtimeapi.ExecSyncResponse, error) {
		return r.runtime.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: int64((timeout + time.Second - 1) / time.Second)}) // whole seconds, rounded up
	})
	if err != nil {
		return nil, nil, 0, err
	}
	return res.Stdout, res.Stderr, res.ExitCode, nil
}

// Exec prepares a streaming exec and returns the URL that serves it.
func (r *Runtime) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	return call(ctx, r, 0, "Exec", req.GetContainerId(), func(ctx context.Context) (*runtimeapi.ExecResponse, error) {
		return r.runtime.Exec(ctx, req)
	})
}

// Attach prepares a streaming attach and returns the URL that serves it.
func (r *Runtime) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	return call(ctx, r, 0, "Attach", req.GetContainerId(), func(ctx context.Context) (*runtimeapi.AttachResponse, error) {
		return r.runtime.Attach(ctx, req)
	})
}

// PortForward prepares a streaming port-forward and returns the URL that serves it.
func (r *Runtime) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	return call(ctx, r, 0, "PortForward", req.GetPodSandboxId(), func(ctx context.Context) (*runtimeapi.PortForwardResponse, error) {
		return r.runtime.PortForward(ctx, req)
	})
}

// ContainerStats returns one container's resource usage.
func (r *Runtime) ContainerStats(ctx context.Context, id string) (*runtimeapi.ContainerStats, error) {
	res, err := call(ctx, r, 0, "ContainerStats", id, func(ctx context.Context) (*runtimeapi.ContainerStatsResponse, error) {
		return r.runtime.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: id})
	})
	if err != nil {
		return nil, err
	}
	return res.Stats, nil
}

// ListContainerStats returns the resource usage of the containers that match filter.
func (r *Runtime) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	res, err := call(ctx, r, 0, "ListContainerStats", "", func(ctx context.Context) (*runtimeapi.ListContainerStatsResponse, error) {
		return r.runtime.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{Filter: filter})
	})
	if err != nil {
		return nil, err
	}
	return res.Stats, nil
}

// ListPodSandboxStats returns the resource usage of the sandboxes that match filter.
func (r *Runtime) ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	res, err := call(ctx, r, 0, "ListPodSandboxStats", "", func(ctx context.Context) (*runtimeapi.ListPodSandboxStatsResponse, error) {
		return r.runtime.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{Filter: filter})
	})
	if err != nil {
		return nil, err
	}
	return res.Stats, nil
}

func sandboxName(config *runtimeapi.PodSandboxConfig) string {
	if m := config.GetMetadata(); m != nil {
		return m.Namespace + "/" + m.Name
	}
	return ""
}
