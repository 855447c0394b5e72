package podconfig

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// FieldRefValue is the value of a downward-API fieldRef: metadata.name,
// namespace, uid, labels, annotations (all of them, formatted, or one by
// ['key']), spec.nodeName, spec.serviceAccountName, status.hostIP(s) (from
// hostIPs) and status.podIP(s) (from podIPs, ordered by the node's
// preferred family). Other paths are errors, as upstream.
func FieldRefValue(pod *corev1.Pod, ref *corev1.ObjectFieldSelector, hostIPs, podIPs []string) (string, error) {
	if ref.APIVersion != "" && ref.APIVersion != "v1" {
		return "", Invalidf("unsupported pod version %q in fieldRef", ref.APIVersion)
	}
	p := ref.FieldPath
	if p == "spec.host" {
		p = "spec.nodeName"
	}
	if path, key, ok := splitSubscript(p); ok {
		switch path {
		case "metadata.annotations":
			if errs := validation.IsQualifiedName(strings.ToLower(key)); len(errs) > 0 {
				return "", Invalidf("invalid key subscript in %s: %s", p, strings.Join(errs, "; "))
			}
			return pod.Annotations[key], nil
		case "metadata.labels":
			if errs := validation.IsQualifiedName(key); len(errs) > 0 {
				return "", Invalidf("invalid key subscript in %s: %s", p, strings.Join(errs, "; "))
			}
			return pod.Labels[key], nil
		}
		return "", Invalidf("field label does not support subscript: %s", p)
	}
	switch p {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		if len(hostIPs) == 0 {
			return "", fmt.Errorf("the node has no IP for %s", p)
		}
		if p == "status.hostIP" {
			return hostIPs[0], nil
		}
		return strings.Join(hostIPs, ","), nil
	case "status.podIP":
		if len(podIPs) == 0 {
			return "", nil
		}
		return podIPs[0], nil
	case "status.podIPs":
		return strings.Join(podIPs, ","), nil
	}
	return "", Invalidf("unsupported fieldPath: %s", p)
}

func splitSubscript(p string) (path, key string, ok bool) {
	if !strings.HasSuffix(p, "']") {
		return p, "", false
	}
	path, key, ok = strings.Cut(strings.TrimSuffix(p, "']"), "['")
	if !ok || path == "" {
		return p, "", false
	}
	return path, key, true
}

// formatMap is key="value" lines sorted by key, as the downward API
// writes labels and annotations.
func formatMap(m map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(k + "=" + strconv.Quote(m[k]))
	}
	return b.String()
}

// ResourceFieldRefValue is the value of a downward-API resourceFieldRef
// of container c (or of ref.ContainerName in the pod): requests or limits
// of cpu, memory, ephemeral-storage or hugepages-<size>, divided by the
// divisor (1 when unset) and rounded up. A missing or zero limit of cpu,
// memory or ephemeral-storage is the node's allocatable (the pod-level
// limit when the pod has one).
func ResourceFieldRefValue(pod *corev1.Pod, c *corev1.Container, ref *corev1.ResourceFieldSelector, allocatable corev1.ResourceList) (string, error) {
	// Like upstream, the limits of the container itself and of the pod's
	// regular containers are defaulted, those of init containers named by
	// containerName are not.
	defaulted := true
	if ref.ContainerName != "" {
		c, defaulted = findContainer(pod, ref.ContainerName)
		if c == nil {
			return "", Invalidf("container %s not found", ref.ContainerName)
		}
	}
	defaults := allocatable
	if pod.Spec.Resources != nil && len(pod.Spec.Resources.Limits) > 0 {
		defaults = allocatable.DeepCopy()
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := pod.Spec.Resources.Limits[name]; ok && !q.IsZero() {
				if _, ok := defaults[name]; ok {
					defaults[name] = q.DeepCopy()
				}
			}
		}
	}
	limits := c.Resources.Limits.DeepCopy()
	if limits == nil {
		limits = corev1.ResourceList{}
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		if q, ok := limits[name]; defaulted && (!ok || q.IsZero()) {
			if d, ok := defaults[name]; ok {
				limits[name] = d.DeepCopy()
			}
		}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	kind, name, _ := strings.Cut(ref.Resource, ".")
	var list corev1.ResourceList
	switch kind {
	case "limits":
		list = limits
	case "requests":
		list = c.Resources.Requests
	}
	rn := corev1.ResourceName(name)
	switch {
	case kind != "limits" && kind != "requests":
	case rn == corev1.ResourceCPU:
		q := list[rn]
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	case rn == corev1.ResourceMemory, rn == corev1.ResourceEphemeralStorage, strings.HasPrefix(name, corev1.ResourceHugePagesPrefix):
		q := list[rn]
		return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
	}
	return "", Invalidf("unsupported container resource: %s", ref.Resource)
}

// findContainer finds a container or init container by name; regular
// tells which.
func findContainer(pod *corev1.Pod, name string) (c *corev1.Container, regular bool) {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i], true
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i], false
		}
	}
	return nil, false
}
