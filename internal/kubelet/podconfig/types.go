package podconfig

import (
	"errors"
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Node is what the translation needs to know about the node and how its
// kubelet is configured.
type Node struct {
	Name string
	// HostIPs are the node's IPs, the primary first: status.hostIP(s).
	HostIPs []string
	// Allocatable stands in for missing cpu, memory and ephemeral-storage
	// limits in resourceFieldRef env vars, as upstream's kubelet does.
	Allocatable corev1.ResourceList
	// MemoryCapacity in bytes scales the oom_score_adj of Burstable pods.
	MemoryCapacity int64
	// ClusterDomain (e.g. cluster.local) makes the pod's FQDN for
	// setHostnameAsFQDN.
	ClusterDomain string
	// CgroupV2 is true on the unified cgroup hierarchy.
	CgroupV2 bool
	// SingleProcessOOMKill turns off memory.oom.group on cgroup v2
	// (kubelet's singleProcessOOMKill; always the behaviour on v1).
	SingleProcessOOMKill bool
	// SwapController is true when the memory cgroup controls swap: the
	// kubelet then forbids swap (NoSwap).
	SwapController bool
	// SeccompDefault is the kubelet's --seccomp-default: RuntimeDefault
	// instead of Unconfined for containers that do not say.
	SeccompDefault bool
	// SeccompProfileRoot holds Localhost seccomp profiles
	// (<kubelet root>/seccomp).
	SeccompProfileRoot string
	// ExtraMaskedPaths are added to the default masked paths (upstream
	// adds /sys/devices/system/cpu/cpu<N>/thermal_throttle where they exist).
	ExtraMaskedPaths []string
}

// ErrNotFound is wrapped by an EnvSource when a ConfigMap or Secret does
// not exist (a Kubernetes NotFound API error is understood too).
var ErrNotFound = errors.New("not found")

// ErrInvalid is wrapped by errors about a pod the kubelet cannot run as
// written (unsupported field paths, bad mounts, runAsNonRoot violations).
var ErrInvalid = errors.New("invalid pod")

// Invalidf is an error about a pod the kubelet cannot run as written: its
// text is the formatted message alone, as upstream's kubelet words it (it
// reaches the container's waiting message), and errors.Is finds
// ErrInvalid in it.
func Invalidf(format string, args ...any) error {
	return invalidError{fmt.Sprintf(format, args...)}
}

type invalidError struct{ msg string }

func (e invalidError) Error() string        { return e.msg }
func (e invalidError) Is(target error) bool { return target == ErrInvalid }

// ErrUnsupported is wrapped by errors about pod features orch does not
// implement (user namespaces, fileKeyRef env vars): the pod cannot run
// here rather than run differently from Kubernetes.
var ErrUnsupported = errors.New("not supported by orch")

// PodLogDirectory is the directory of the pod's container logs under
// root (/var/log/pods): <root>/<namespace>_<name>_<uid>.
func PodLogDirectory(root string, pod *corev1.Pod) string {
	return filepath.Join(root, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID))
}

// ContainerLogPath is the container's log path relative to the pod's log
// directory: <container>/<restartCount>.log.
func ContainerLogPath(container string, restartCount int) string {
	return filepath.Join(container, fmt.Sprintf("%d.log", restartCount))
}

func int64Value(v *int64) *runtimeapi.Int64Value {
	if v == nil {
		return nil
	}
	return &runtimeapi.Int64Value{Value: *v}
}
