package daemonset

import (
	"sort"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"orch/internal/controller"
)

// templateGenerationLabel is the pod label upstream still writes with the
// DaemonSet's template generation (the deprecated annotation's value).
const templateGenerationLabel = "pod-template-generation"

// templateGeneration reads the generation of ds's pod template from the
// deprecated annotation the apiserver keeps; ok is false when it is
// missing or unreadable.
func templateGeneration(ds *appsv1.DaemonSet) (gen int64, ok bool) {
	v, found := ds.Annotations[appsv1.DeprecatedTemplateGeneration]
	if !found {
		return 0, false
	}
	gen, err := strconv.ParseInt(v, 10, 64)
	return gen, err == nil
}

// podTemplate is the template of the pods ds creates now: its own, plus
// the automatic tolerations and the labels that tell the revision
// (controller-revision-hash) and the template generation.
func podTemplate(ds *appsv1.DaemonSet, hash string) *corev1.PodTemplateSpec {
	t := ds.Spec.Template.DeepCopy()
	addDaemonTolerations(&t.Spec)
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	if gen, ok := templateGeneration(ds); ok {
		t.Labels[templateGenerationLabel] = strconv.FormatInt(gen, 10)
	}
	if hash != "" {
		t.Labels[appsv1.ControllerRevisionHashLabelKey] = hash
	}
	return t
}

// isUpdated reports whether pod was made from ds's current template: its
// revision hash or its template generation label says so.
func isUpdated(pod *corev1.Pod, ds *appsv1.DaemonSet, hash string) bool {
	if hash != "" && pod.Labels[appsv1.ControllerRevisionHashLabelKey] == hash {
		return true
	}
	gen, ok := templateGeneration(ds)
	return ok && pod.Labels[templateGenerationLabel] == strconv.FormatInt(gen, 10)
}

// isAvailable: ready for at least minReadySeconds at now.
func isAvailable(pod *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	c := controller.ReadyCondition(pod)
	if c == nil || c.Status != corev1.ConditionTrue {
		return false
	}
	if minReadySeconds == 0 {
		return true
	}
	return !c.LastTransitionTime.IsZero() && c.LastTransitionTime.Add(time.Duration(minReadySeconds)*time.Second).Before(now)
}

// sortOldestFirst orders pods bound first, then by creation time, then by
// name: the first is the one a node keeps.
func sortOldestFirst(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if (a.Spec.NodeName != "") != (b.Spec.NodeName != "") {
			return a.Spec.NodeName != ""
		}
		if a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.Name < b.Name
		}
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	})
}

// rollingLimits returns maxSurge and maxUnavailable of ds's rolling update
// scaled to desired nodes (percentages round up). A DaemonSet that allows
// neither gets maxUnavailable 1, as upstream.
func rollingLimits(ds *appsv1.DaemonSet, desired int) (surge, unavailable int, err error) {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || ru == nil {
		return 0, 0, nil
	}
	if ru.MaxSurge != nil {
		if surge, err = intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, desired, true); err != nil {
			return 0, 0, err
		}
	}
	if ru.MaxUnavailable != nil {
		if unavailable, err = intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, desired, true); err != nil {
			return 0, 0, err
		}
	}
	if desired > 0 && surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return surge, unavailable, nil
}

// allowsSurge: a node may run an old and a new pod at once during an update.
func allowsSurge(ds *appsv1.DaemonSet) bool {
	surge, _, err := rollingLimits(ds, 1)
	return err == nil && surge > 0
}
