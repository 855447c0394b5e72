package pods

import (
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
)

// resize is the pods/resize subresource (in-place pod resize), as
// upstream's podResizeStrategy with its alpha gates off: a write there
// changes the resources and resizePolicy of the containers and sidecars
// and nothing else; the kubelet then actuates the new resources.
var resize = registry.SpecSubresource{
	PrepareForUpdate: func(obj, old runtime.Object) {
		keepOnlyResize(obj.(*corev1.Pod), old.(*corev1.Pod))
	},
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		return validateResize(obj.(*corev1.Pod), old.(*corev1.Pod))
	},
}

// keepOnlyResize drops every spec change but the containers' resources
// and resize policies. Containers added, removed, renamed or reordered are
// kept as sent, for validation to refuse.
func keepOnlyResize(pod, old *corev1.Pod) {
	containers, ok := resizedContainers(pod.Spec.Containers, old.Spec.Containers)
	if !ok {
		return
	}
	initContainers, ok := resizedContainers(pod.Spec.InitContainers, old.Spec.InitContainers)
	if !ok {
		return
	}
	pod.Spec = *old.Spec.DeepCopy()
	pod.Spec.Containers, pod.Spec.InitContainers = containers, initContainers
}

// resizedContainers are old with the resources and resize policies of
// their namesakes in sent; false when the names do not line up.
func resizedContainers(sent, old []corev1.Container) ([]corev1.Container, bool) {
	if len(sent) != len(old) {
		return nil, false
	}
	out := make([]corev1.Container, len(old))
	for i := range old {
		if sent[i].Name != old[i].Name {
			return nil, false
		}
		out[i] = *old[i].DeepCopy()
		out[i].Resources, out[i].ResizePolicy = sent[i].Resources, sent[i].ResizePolicy
	}
	return out, true
}

// validateResize is upstream's ValidatePodResize less the checks every
// pod gets (Validate runs as well), with pod-level resources, init
// containers other than sidecars and emptyDir sizes not resizable (their
// feature gates are alpha and off upstream).
func validateResize(pod, old *corev1.Pod) field.ErrorList {
	if _, ok := old.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods cannot be resized")}
	}
	if old.Spec.OS != nil && old.Spec.OS.Name == corev1.Windows {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "windows pods cannot be resized")}
	}
	spec := field.NewPath("spec")
	var errs field.ErrorList
	oldQOS := old.Status.QOSClass
	if oldQOS == "" {
		oldQOS = QOSClass(&old.Spec)
	}
	if QOSClass(&pod.Spec) != oldQOS {
		errs = append(errs, field.Invalid(spec, pod.Status.QOSClass, "Pod QOS Class may not change as a result of resizing"))
	}
	if !nodeSupportsResize(old) {
		errs = append(errs, field.Forbidden(spec, "Pod running on node without support for resize"))
	}
	if hasPodLevelResources(old) || hasPodLevelResources(pod) {
		return append(errs, field.Forbidden(field.NewPath(""), "resize of pods with pod-level resources is forbidden when InPlacePodLevelResourcesVerticalScalingEnabled feature gate is disabled"))
	}
	if order := validateContainerOrder(pod, old, spec); len(order) > 0 {
		return append(errs, order...)
	}
	for i := range old.Spec.InitContainers {
		if isSidecar(&old.Spec.InitContainers[i]) {
			errs = append(errs, validateNothingRemoved(&pod.Spec.InitContainers[i].Resources, &old.Spec.InitContainers[i].Resources,
				spec.Child("initContainers").Index(i).Child("resources"))...)
		}
	}
	for i := range old.Spec.Containers {
		errs = append(errs, validateNothingRemoved(&pod.Spec.Containers[i].Resources, &old.Spec.Containers[i].Resources,
			spec.Child("containers").Index(i).Child("resources"))...)
	}
	rest := pod.Spec.DeepCopy()
	for i := range rest.Containers {
		keepCPUMemory(&rest.Containers[i], &old.Spec.Containers[i])
		if !apiequality.Semantic.DeepEqual(rest.Containers[i], old.Spec.Containers[i]) {
			errs = append(errs, field.Forbidden(spec, "only cpu and memory resources are mutable"))
		}
	}
	for i := range rest.InitContainers {
		c, o := &rest.InitContainers[i], &old.Spec.InitContainers[i]
		switch {
		case isSidecar(c):
			keepCPUMemory(c, o)
			if !apiequality.Semantic.DeepEqual(*c, *o) {
				errs = append(errs, field.Forbidden(spec.Child("initContainers").Index(i), "only cpu and memory resources for init or sidecar containers are mutable"))
			}
		case !apiequality.Semantic.DeepEqual(*c, *o):
			errs = append(errs, field.Forbidden(spec, "resources for non-sidecar init containers are immutable"))
		}
		*c = *o
	}
	if !apiequality.Semantic.DeepEqual(pod.Spec.Volumes, old.Spec.Volumes) {
		errs = append(errs, field.Forbidden(spec.Child("volumes"), "volumes are immutable on resize when InPlacePodVerticalScalingMemoryBackedVolumes feature gate is disabled"))
	}
	if len(errs) > 0 {
		return errs
	}
	rest.Volumes = old.Spec.Volumes
	if !apiequality.Semantic.DeepEqual(*rest, old.Spec) {
		errs = append(errs, field.Forbidden(spec, "only cpu and memory resources are mutable"))
	}
	return errs
}

// nodeSupportsResize is upstream's guard against old kubelets: a pod
// whose first running container reports no resources in its status runs
// on a node that cannot resize.
func nodeSupportsResize(pod *corev1.Pod) bool {
	for _, c := range pod.Status.ContainerStatuses {
		if c.State.Running != nil {
			return c.Resources != nil
		}
	}
	return true
}

func hasPodLevelResources(pod *corev1.Pod) bool {
	r := pod.Spec.Resources
	return r != nil && len(r.Requests)+len(r.Limits) > 0
}

func isSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

func validateContainerOrder(pod, old *corev1.Pod, spec *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, l := range []struct {
		name      string
		new, prev []corev1.Container
	}{{"containers", pod.Spec.Containers, old.Spec.Containers}, {"initContainers", pod.Spec.InitContainers, old.Spec.InitContainers}} {
		if len(l.new) != len(l.prev) {
			errs = append(errs, field.Forbidden(spec.Child(l.name), l.name+" may not be added or removed on resize"))
			continue
		}
		for i := range l.prev {
			if l.new[i].Name != l.prev[i].Name {
				errs = append(errs, field.Forbidden(spec.Child(l.name).Index(i).Child("name"), "containers may not be renamed or reordered on resize"))
			}
		}
	}
	return errs
}

// validateNothingRemoved refuses a resize that drops a request or limit.
func validateNothingRemoved(r, old *corev1.ResourceRequirements, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if removed(r.Requests, old.Requests) {
		errs = append(errs, field.Forbidden(path.Child("requests"), "resource requests cannot be removed"))
	}
	if removed(r.Limits, old.Limits) {
		errs = append(errs, field.Forbidden(path.Child("limits"), "resource limits cannot be removed"))
	}
	return errs
}

func removed(list, old corev1.ResourceList) bool {
	for name := range old {
		if _, ok := list[name]; !ok {
			return true
		}
	}
	return false
}

// keepCPUMemory sets c's cpu and memory requests and limits back to
// old's, so that what else differs shows.
func keepCPUMemory(c, old *corev1.Container) {
	c.Resources.Limits = withCPUMemoryOf(c.Resources.Limits, old.Resources.Limits)
	c.Resources.Requests = withCPUMemoryOf(c.Resources.Requests, old.Resources.Requests)
}

func withCPUMemoryOf(list, old corev1.ResourceList) corev1.ResourceList {
	if list == nil && old == nil {
		return nil
	}
	out := corev1.ResourceList{}
	for name, q := range list {
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
			out[name] = q
		}
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := old[name]; ok {
			out[name] = q
		}
	}
	return out
}
