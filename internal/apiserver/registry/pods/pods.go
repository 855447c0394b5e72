// Package pods is the registry entry for core/v1 pods.
//
// The pod spec is defaulted and validated by the shared podspec package; this
// package adds what is particular to Pod objects: pod-only defaults, the
// Pending phase and QoS class given on create, the rules for updating a
// running pod, the pods/ephemeralcontainers subresource (ephemeral.go), the
// pods/resize subresource (resize.go), the
// `kubectl get pods` table and the pod field selectors.
package pods

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/podspec"
)

// Resource returns the pods entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:     corev1.SchemeGroupVersion,
		Resource:         "pods",
		Kind:             "Pod",
		SingularName:     "pod",
		Namespaced:       true,
		ShortNames:       []string{"po"},
		Categories:       []string{"all"},
		New:              func() runtime.Object { return &corev1.Pod{} },
		NewList:          func() runtime.Object { return &corev1.PodList{} },
		HasStatus:        true,
		StatusMeta:       registry.StatusKeepsMeta,
		Default:          func(obj runtime.Object) { Default(obj.(*corev1.Pod)) },
		PrepareForCreate: func(obj runtime.Object) { prepareForCreate(obj.(*corev1.Pod)) },
		Validate:         func(obj runtime.Object) field.ErrorList { return validate(obj.(*corev1.Pod)) },
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validateUpdate(obj.(*corev1.Pod), old.(*corev1.Pod))
		},
		ValidateCreate:   func(obj runtime.Object) field.ErrorList { return validateCreate(obj.(*corev1.Pod)) },
		SpecSubresources: map[string]registry.SpecSubresource{"ephemeralcontainers": ephemeralContainers, "resize": resize},
		Columns:          columns,
		Row:              func(obj runtime.Object, now time.Time) []interface{} { return row(obj.(*corev1.Pod), now) },
		SelectableFields: func(obj runtime.Object) fields.Set { return selectableFields(obj.(*corev1.Pod)) },
	}
}

// Default applies the upstream defaults of a Pod: those of every pod spec,
// those only pods get, and the pairing of the singular and plural IP fields.
func Default(pod *corev1.Pod) {
	podspec.DefaultPodSpec(&pod.Spec)
	podspec.DefaultPodOnly(&pod.Spec)
	s := &pod.Status
	if len(s.PodIPs) == 0 && s.PodIP != "" {
		s.PodIPs = []corev1.PodIP{{IP: s.PodIP}}
	}
	if len(s.PodIPs) > 0 {
		s.PodIP = s.PodIPs[0].IP
	}
	if len(s.HostIPs) == 0 && s.HostIP != "" {
		s.HostIPs = []corev1.HostIP{{IP: s.HostIP}}
	}
	if len(s.HostIPs) > 0 {
		s.HostIP = s.HostIPs[0].IP
	}
}

// prepareForCreate gives a new pod a fresh status: Pending, its QoS class,
// and the PodScheduled condition when scheduling gates hold it back.
func prepareForCreate(pod *corev1.Pod) {
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: QOSClass(&pod.Spec)}
	if len(pod.Spec.SchedulingGates) > 0 {
		pod.Status.Conditions = []corev1.PodCondition{{
			Type:    corev1.PodScheduled,
			Status:  corev1.ConditionFalse,
			Reason:  corev1.PodReasonSchedulingGated,
			Message: "Scheduling is blocked due to non-empty scheduling gates",
		}}
	}
}

func selectableFields(pod *corev1.Pod) fields.Set {
	podIP := ""
	if len(pod.Status.PodIPs) > 0 {
		podIP = pod.Status.PodIPs[0].IP
	}
	return fields.Set{
		"spec.nodeName":            pod.Spec.NodeName,
		"spec.restartPolicy":       string(pod.Spec.RestartPolicy),
		"spec.schedulerName":       pod.Spec.SchedulerName,
		"spec.serviceAccountName":  pod.Spec.ServiceAccountName,
		"spec.hostNetwork":         strconv.FormatBool(pod.Spec.HostNetwork),
		"status.phase":             string(pod.Status.Phase),
		"status.podIP":             podIP,
		"status.nominatedNodeName": pod.Status.NominatedNodeName,
	}
}
