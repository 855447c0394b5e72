// Package podspec holds the defaulting and validation of core/v1 PodSpec and
// PodTemplateSpec shared by every resource that embeds a pod: pods, pod
// templates, replication controllers, and the apps and batch workloads.
//
// The rules follow upstream Kubernetes (SetDefaults_PodSpec and
// ValidatePodSpec) for the cases users meet; where a rule is left out it is
// one that only applies to alpha features or removed volume plugins. The
// defaulting itself is internal/poddefaults, which the kubelet shares.
package podspec

import (
	corev1 "k8s.io/api/core/v1"

	"orch/internal/poddefaults"
)

// DefaultPodTemplateSpec applies upstream defaults to a pod template.
func DefaultPodTemplateSpec(t *corev1.PodTemplateSpec) { poddefaults.PodTemplateSpec(t) }

// DefaultPodSpec applies the defaults of every PodSpec (poddefaults.PodSpec).
func DefaultPodSpec(spec *corev1.PodSpec) { poddefaults.PodSpec(spec) }

// DefaultPodOnly applies the defaults of Pod objects only (poddefaults.PodOnly).
func DefaultPodOnly(spec *corev1.PodSpec) { poddefaults.PodOnly(spec) }

// RoundResourceList rounds quantities up to milli precision (poddefaults.RoundResourceList).
func RoundResourceList(list corev1.ResourceList) { poddefaults.RoundResourceList(list) }
