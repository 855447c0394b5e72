package volumes

import (
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"orch/internal/kubelet/podconfig"
)

// downwardAPIPayload is upstream's CollectData: a file per item with the
// value of its fieldRef (the pod's metadata only, as volumes allow) or
// resourceFieldRef (limits default to the node's allocatable). Errors of
// all items are aggregated.
func (s *setup) downwardAPIPayload(items []corev1.DownwardAPIVolumeFile, mode int32) (map[string]fileProjection, error) {
	out := make(map[string]fileProjection, len(items))
	var errs []error
	for _, it := range items {
		f := fileProjection{Mode: mode}
		if it.Mode != nil {
			f.Mode = *it.Mode
		}
		var v string
		var err error
		switch {
		case it.FieldRef != nil:
			v, err = volumeFieldRef(s.pod, it.FieldRef)
		case it.ResourceFieldRef != nil:
			v, err = s.volumeResourceFieldRef(it.ResourceFieldRef)
		}
		if err != nil {
			errs = append(errs, err)
		}
		f.Data = []byte(v)
		out[filepath.Clean(it.Path)] = f
	}
	return out, utilerrors.NewAggregate(errs)
}

// volumeFieldRef is a fieldRef of a downwardAPI volume: only metadata
// (name, namespace, uid, labels, annotations, one label or annotation),
// unlike env vars.
func volumeFieldRef(pod *corev1.Pod, ref *corev1.ObjectFieldSelector) (string, error) {
	p := ref.FieldPath
	base, _, subscripted := strings.Cut(p, "['")
	switch base {
	case "metadata.labels", "metadata.annotations":
	case "metadata.name", "metadata.namespace", "metadata.uid":
		if subscripted {
			return "", podconfig.Invalidf("fieldPath %q does not support subscript", p)
		}
	default:
		return "", podconfig.Invalidf("unsupported fieldPath: %v", p)
	}
	return podconfig.FieldRefValue(pod, ref, nil, nil)
}

// volumeResourceFieldRef is a resourceFieldRef of a downwardAPI volume:
// the named container's (init containers' too) requests or limits, the
// limits of cpu, memory and ephemeral-storage defaulting to allocatable.
func (s *setup) volumeResourceFieldRef(ref *corev1.ResourceFieldSelector) (string, error) {
	c := findContainer(s.pod, ref.ContainerName)
	if c == nil {
		return "", podconfig.Invalidf("container %s not found", ref.ContainerName)
	}
	own := *ref
	own.ContainerName = ""
	return podconfig.ResourceFieldRefValue(s.pod, c, &own, s.m.Allocatable)
}

func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range cs {
			if cs[i].Name == name {
				return &cs[i]
			}
		}
	}
	return nil
}
