package statefulset

import (
	"regexp"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podNamePattern splits a stateful pod's name into its set's name and its
// ordinal.
var podNamePattern = regexp.MustCompile(`^(.*)-([0-9]+)$`)

// parentAndOrdinal returns the set name and ordinal in a pod's name; the
// ordinal is -1 when the name has none.
func parentAndOrdinal(pod *corev1.Pod) (string, int) {
	m := podNamePattern.FindStringSubmatch(pod.Name)
	if m == nil {
		return "", -1
	}
	n, err := strconv.ParseInt(m[2], 10, 32)
	if err != nil {
		return m[1], -1
	}
	return m[1], int(n)
}

func ordinalOf(pod *corev1.Pod) int {
	_, n := parentAndOrdinal(pod)
	return n
}

// startOrdinal is spec.ordinals.start, 0 when unset.
func startOrdinal(set *appsv1.StatefulSet) int {
	if set.Spec.Ordinals != nil {
		return int(set.Spec.Ordinals.Start)
	}
	return 0
}

// replicasOf is spec.replicas, 1 when unset (the apiserver defaults it).
func replicasOf(set *appsv1.StatefulSet) int {
	if set.Spec.Replicas == nil {
		return 1
	}
	return int(*set.Spec.Replicas)
}

// endOrdinal is the last ordinal the set should run (start-1 when it is
// scaled to zero).
func endOrdinal(set *appsv1.StatefulSet) int {
	return startOrdinal(set) + replicasOf(set) - 1
}

// inOrdinalRange reports whether pod's ordinal is one set should run.
func inOrdinalRange(set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	n := ordinalOf(pod)
	return n >= startOrdinal(set) && n <= endOrdinal(set)
}

func podName(set *appsv1.StatefulSet, ordinal int) string {
	return set.Name + "-" + strconv.Itoa(ordinal)
}

// claimName is the name of the claim made from template for the pod with
// ordinal: <template>-<set>-<ordinal>.
func claimName(set *appsv1.StatefulSet, template string, ordinal int) string {
	return template + "-" + set.Name + "-" + strconv.Itoa(ordinal)
}

// isMemberOf reports whether pod's name says it belongs to set.
func isMemberOf(set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	parent, _ := parentAndOrdinal(pod)
	return parent == set.Name
}

// identityMatches reports whether pod has the name, namespace and pod-name
// label of its ordinal in set.
func identityMatches(set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	parent, n := parentAndOrdinal(pod)
	return n >= 0 && parent == set.Name && pod.Name == podName(set, n) &&
		pod.Namespace == set.Namespace && pod.Labels[appsv1.StatefulSetPodNameLabel] == pod.Name
}

// storageMatches reports whether every claim template of set is mounted in
// pod as a volume of the same name using the pod's own claim.
func storageMatches(set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	n := ordinalOf(pod)
	if n < 0 {
		return false
	}
	volumes := make(map[string]corev1.Volume, len(pod.Spec.Volumes))
	for _, v := range pod.Spec.Volumes {
		volumes[v.Name] = v
	}
	for _, t := range set.Spec.VolumeClaimTemplates {
		v, ok := volumes[t.Name]
		if !ok || v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != claimName(set, t.Name, n) {
			return false
		}
	}
	return true
}

// claimsFor returns the claims pod needs, by template name: each template
// named <template>-<set>-<ordinal>, with the set's matchLabels added.
func claimsFor(set *appsv1.StatefulSet, pod *corev1.Pod) map[string]corev1.PersistentVolumeClaim {
	n := ordinalOf(pod)
	claims := make(map[string]corev1.PersistentVolumeClaim, len(set.Spec.VolumeClaimTemplates))
	for i := range set.Spec.VolumeClaimTemplates {
		t := &set.Spec.VolumeClaimTemplates[i]
		c := t.DeepCopy()
		c.TypeMeta = metav1.TypeMeta{}
		c.Name = claimName(set, t.Name, n)
		c.Namespace = set.Namespace
		c.Status = corev1.PersistentVolumeClaimStatus{}
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		if set.Spec.Selector != nil {
			for k, v := range set.Spec.Selector.MatchLabels {
				c.Labels[k] = v
			}
		}
		claims[t.Name] = *c
	}
	return claims
}

// updateIdentity gives pod the name, namespace and labels of its ordinal.
func updateIdentity(set *appsv1.StatefulSet, pod *corev1.Pod) {
	n := ordinalOf(pod)
	pod.Name = podName(set, n)
	pod.Namespace = set.Namespace
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[appsv1.StatefulSetPodNameLabel] = pod.Name
	pod.Labels[appsv1.PodIndexLabel] = strconv.Itoa(n)
}

// updateStorage points pod's claim-template volumes at the pod's claims,
// keeping its other volumes. Claim volumes come first, in template order.
func updateStorage(set *appsv1.StatefulSet, pod *corev1.Pod) {
	claims := claimsFor(set, pod)
	volumes := make([]corev1.Volume, 0, len(claims)+len(pod.Spec.Volumes))
	for _, t := range set.Spec.VolumeClaimTemplates {
		volumes = append(volumes, corev1.Volume{
			Name: t.Name,
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
				ClaimName: claims[t.Name].Name,
			}},
		})
	}
	for _, v := range pod.Spec.Volumes {
		if _, ok := claims[v.Name]; !ok {
			volumes = append(volumes, v)
		}
	}
	pod.Spec.Volumes = volumes
}

// newPod builds pod ordinal of set from set's template, labelled with
// revision.
func newPod(set *appsv1.StatefulSet, ordinal int, revision string) *corev1.Pod {
	t := &set.Spec.Template
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            podName(set, ordinal),
			Labels:          copyMap(t.Labels),
			Annotations:     copyMap(t.Annotations),
			Finalizers:      append([]string(nil), t.Finalizers...),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, controllerKind)},
		},
		Spec: *t.Spec.DeepCopy(),
	}
	updateIdentity(set, pod)
	pod.Spec.Hostname = pod.Name
	pod.Spec.Subdomain = set.Spec.ServiceName
	updateStorage(set, pod)
	pod.Labels[appsv1.StatefulSetRevisionLabel] = revision
	return pod
}

func revisionOf(pod *corev1.Pod) string {
	return pod.Labels[appsv1.StatefulSetRevisionLabel]
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
