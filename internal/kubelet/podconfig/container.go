package podconfig

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/dump"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Annotations the kubelet puts on containers.
const (
	AnnotationHash                     = "io.kubernetes.container.hash"
	AnnotationRestartCount             = "io.kubernetes.container.restartCount"
	AnnotationTerminationMessagePath   = "io.kubernetes.container.terminationMessagePath"
	AnnotationTerminationMessagePolicy = "io.kubernetes.container.terminationMessagePolicy"
	AnnotationPreStopHandler           = "io.kubernetes.container.preStopHandler"
	AnnotationPorts                    = "io.kubernetes.container.ports"
	AnnotationDeletionGracePeriod      = "io.kubernetes.pod.deletionGracePeriod"
	AnnotationTerminationGracePeriod   = "io.kubernetes.pod.terminationGracePeriod"
	// AnnotationResources holds the cpu and memory requests and limits a
	// container was created with (JSON), for in-place resize to compare.
	AnnotationResources = "io.orch.container.resources"
)

// Container is what CreateContainer needs beyond the pod, the container
// and the node, decided elsewhere.
type Container struct {
	// RestartCount is the attempt: it names the log file and goes into
	// the metadata and annotations.
	RestartCount int
	// ImageRef is the image as the runtime knows it (its ID).
	ImageRef string
	// ImageUID and ImageUsername are the image's user from ImageStatus
	// (see ImageUser); both empty means root.
	ImageUID      *int64
	ImageUsername string
	// PodIPs are the sandbox's IPs, ordered by the node's preferred family.
	PodIPs []string
	// Volumes maps the pod's volume names to where they are on the host.
	Volumes map[string]Volume
	// EtcHostsPath is the host file mounted as /etc/hosts (the kubelet's
	// <pod dir>/etc-hosts); empty for none.
	EtcHostsPath string
	// TerminationLogPath is a host file (made for this attempt) mounted
	// at the container's terminationMessagePath; empty for none.
	TerminationLogPath string
	// RecursiveReadOnly says whether the runtime supports recursive
	// read-only mounts.
	RecursiveReadOnly bool
	// TargetContainerID is, for an ephemeral (debug) container with a
	// targetContainerName, the runtime ID of that container: its PID
	// namespace is joined unless the pod shares one or uses the node's.
	TargetContainerID string
}

// Volume is a prepared volume on the host.
type Volume struct {
	HostPath string
	// ReadOnly forces every mount of it read-only (e.g. a read-only PVC).
	ReadOnly bool
}

// ContainerConfig is the ContainerConfig of CreateContainer for container
// c of pod. It checks runAsNonRoot first.
func ContainerConfig(pod *corev1.Pod, c *corev1.Container, node Node, in Container, src EnvSource) (*runtimeapi.ContainerConfig, error) {
	if err := VerifyRunAsNonRoot(pod, c, in.ImageUID, in.ImageUsername); err != nil {
		return nil, err
	}
	env, err := Environment(pod, c, node, in.PodIPs, src)
	if err != nil {
		return nil, err
	}
	envMap := make(map[string]string, len(env))
	kvs := make([]*runtimeapi.KeyValue, 0, len(env))
	for _, e := range env {
		envMap[e.Name] = e.Value
		kvs = append(kvs, &runtimeapi.KeyValue{Key: e.Name, Value: []byte(e.Value)})
	}
	mounts, err := Mounts(pod, c, in, envMap)
	if err != nil {
		return nil, err
	}
	sc, err := ContainerSecurityContext(pod, c, node, in.ImageUID, in.ImageUsername)
	if err != nil {
		return nil, err
	}
	if in.TargetContainerID != "" && sc.NamespaceOptions.Pid == runtimeapi.NamespaceMode_CONTAINER {
		sc.NamespaceOptions.Pid = runtimeapi.NamespaceMode_TARGET
		sc.NamespaceOptions.TargetId = in.TargetContainerID
	}
	annotations, err := ContainerAnnotations(pod, c, in.RestartCount)
	if err != nil {
		return nil, err
	}
	lookup := lookupIn(envMap)
	return &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: uint32(in.RestartCount)},
		Image:       &runtimeapi.ImageSpec{Image: in.ImageRef, UserSpecifiedImage: c.Image},
		Command:     expandAll(c.Command, lookup),
		Args:        expandAll(c.Args, lookup),
		WorkingDir:  c.WorkingDir,
		Envs:        kvs,
		Mounts:      mounts,
		Labels:      ContainerLabels(pod, c),
		Annotations: annotations,
		LogPath:     ContainerLogPath(c.Name, in.RestartCount),
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources:       ContainerResources(pod, c, node),
			SecurityContext: sc,
		},
	}, nil
}

// expandAll expands $(VAR) in each of ss; nil stays nil, so the runtime
// uses the image's entrypoint or cmd.
func expandAll(ss []string, lookup func(string) (string, bool)) []string {
	if len(ss) == 0 {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = Expand(s, lookup)
	}
	return out
}

// ContainerLabels are the container's labels: the pod's name, namespace
// and UID and the container's name (not the pod's own labels).
func ContainerLabels(pod *corev1.Pod, c *corev1.Container) map[string]string {
	return map[string]string{
		LabelPodName:       pod.Name,
		LabelPodNamespace:  pod.Namespace,
		LabelPodUID:        string(pod.UID),
		LabelContainerName: c.Name,
	}
}

// ContainerAnnotations are the annotations the kubelet reads back from a
// running container: hash, restart count, termination message path and
// policy, the pod's grace periods, the preStop handler, the ports and the
// cpu and memory resources.
func ContainerAnnotations(pod *corev1.Pod, c *corev1.Container, restartCount int) (map[string]string, error) {
	resources, err := json.Marshal(CPUMemory(c.Resources))
	if err != nil {
		return nil, fmt.Errorf("encode the resources of container %s: %w", c.Name, err)
	}
	a := map[string]string{
		AnnotationResources:                string(resources),
		AnnotationHash:                     strconv.FormatUint(ContainerHash(c), 16),
		AnnotationRestartCount:             strconv.Itoa(restartCount),
		AnnotationTerminationMessagePath:   c.TerminationMessagePath,
		AnnotationTerminationMessagePolicy: string(c.TerminationMessagePolicy),
	}
	if g := pod.DeletionGracePeriodSeconds; g != nil {
		a[AnnotationDeletionGracePeriod] = strconv.FormatInt(*g, 10)
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		a[AnnotationTerminationGracePeriod] = strconv.FormatInt(*g, 10)
	}
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		b, err := json.Marshal(c.Lifecycle.PreStop)
		if err != nil {
			return nil, fmt.Errorf("encode the preStop handler of container %s: %w", c.Name, err)
		}
		a[AnnotationPreStopHandler] = string(b)
	}
	if len(c.Ports) > 0 {
		b, err := json.Marshal(c.Ports)
		if err != nil {
			return nil, fmt.Errorf("encode the ports of container %s: %w", c.Name, err)
		}
		a[AnnotationPorts] = string(b)
	}
	return a, nil
}

// ContainerHash is upstream's container hash, over the container's name
// and image only (the fields whose change restarts it): FNV-32a of the
// dumped JSON of {"image":…,"name":…}. It equals the hash a Kubernetes
// kubelet computes for the same container.
func ContainerHash(c *corev1.Container) uint64 {
	b, _ := json.Marshal(map[string]string{"name": c.Name, "image": c.Image})
	h := fnv.New32a()
	fmt.Fprintf(h, "%v", dump.ForHash(b))
	return uint64(h.Sum32())
}

// Mounts are the container's mounts: its volumeMounts on the host paths
// of in.Volumes (subPath and subPathExpr joined below them — orch does
// not yet guard subPaths against symlinks out of the volume as upstream
// does), then /etc/hosts, then the termination log. env expands
// subPathExpr.
func Mounts(pod *corev1.Pod, c *corev1.Container, in Container, env map[string]string) ([]*runtimeapi.Mount, error) {
	mounts := []*runtimeapi.Mount{}
	etcHosts := in.EtcHostsPath != "" && (len(in.PodIPs) > 0 || pod.Spec.HostNetwork)
	for _, m := range c.VolumeMounts {
		if m.MountPath == "/etc/hosts" {
			etcHosts = false
		}
		vol, ok := in.Volumes[m.Name]
		if !ok {
			return nil, fmt.Errorf("cannot find volume %q to mount into container %q", m.Name, c.Name)
		}
		sub := m.SubPath
		if m.SubPathExpr != "" {
			var missing []string
			sub = Expand(m.SubPathExpr, func(name string) (string, bool) {
				v := env[name]
				if v == "" {
					missing = append(missing, name)
				}
				return v, true
			})
			if len(missing) > 0 {
				slices.Sort(missing)
				return nil, Invalidf("volumeMount %q of container %q: missing value for %s", m.Name, c.Name, strings.Join(slices.Compact(missing), ", "))
			}
		}
		host := vol.HostPath
		if sub != "" {
			if filepath.IsAbs(sub) {
				return nil, Invalidf("error SubPath `%s` must not be an absolute path", sub)
			}
			if slices.Contains(strings.Split(sub, "/"), "..") {
				return nil, Invalidf("unable to provision SubPath `%s`: must not contain '..'", sub)
			}
			host = filepath.Join(host, sub)
		}
		prop, err := propagation(m.MountPropagation)
		if err != nil {
			return nil, err
		}
		rro, err := recursiveReadOnly(m, in.RecursiveReadOnly)
		if err != nil {
			return nil, err
		}
		target := m.MountPath
		if !strings.HasPrefix(target, "/") {
			target = path.Clean("/" + target)
		}
		mounts = append(mounts, &runtimeapi.Mount{
			ContainerPath:     target,
			HostPath:          host,
			Readonly:          m.ReadOnly || vol.ReadOnly,
			RecursiveReadOnly: rro,
			Propagation:       prop,
		})
	}
	if etcHosts {
		mounts = append(mounts, &runtimeapi.Mount{ContainerPath: "/etc/hosts", HostPath: in.EtcHostsPath})
	}
	if in.TerminationLogPath != "" && c.TerminationMessagePath != "" {
		mounts = append(mounts, &runtimeapi.Mount{ContainerPath: path.Clean("/" + c.TerminationMessagePath), HostPath: in.TerminationLogPath})
	}
	return mounts, nil
}

func propagation(m *corev1.MountPropagationMode) (runtimeapi.MountPropagation, error) {
	switch {
	case m == nil, *m == corev1.MountPropagationNone:
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE, nil
	case *m == corev1.MountPropagationHostToContainer:
		return runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER, nil
	case *m == corev1.MountPropagationBidirectional:
		return runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL, nil
	}
	return 0, Invalidf("invalid MountPropagation mode %q", *m)
}

func recursiveReadOnly(m corev1.VolumeMount, supported bool) (bool, error) {
	if m.RecursiveReadOnly == nil || *m.RecursiveReadOnly == corev1.RecursiveReadOnlyDisabled {
		return false, nil
	}
	if !m.ReadOnly {
		return false, Invalidf("volume %q requested recursive read-only mode, but it is not read-only", m.Name)
	}
	if m.MountPropagation != nil && *m.MountPropagation != corev1.MountPropagationNone {
		return false, Invalidf("volume %q requested recursive read-only mode, but it is not compatible with propagation %q", m.Name, *m.MountPropagation)
	}
	switch *m.RecursiveReadOnly {
	case corev1.RecursiveReadOnlyIfPossible:
		return supported, nil
	case corev1.RecursiveReadOnlyEnabled:
		if !supported {
			return false, Invalidf("volume %q requested recursive read-only mode, but the runtime does not support it", m.Name)
		}
		return true, nil
	}
	return false, Invalidf("unknown recursive read-only mode %q", *m.RecursiveReadOnly)
}
