package quota

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestUsageOfOtherResources(t *testing.T) {
	gold := "gold"
	claim := func(class *string, size string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: class,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}}}
	}
	pod := func(phase corev1.PodPhase, requests corev1.ResourceList) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Requests: requests, Limits: requests}}}}, Status: corev1.PodStatus{Phase: phase}}
	}
	dongles := corev1.ResourceList{"example.com/dongle": resource.MustParse("2"), "hugepages-2Mi": resource.MustParse("4Mi")}
	o := Objects{
		Pods:   []*corev1.Pod{pod(corev1.PodRunning, dongles), pod(corev1.PodPending, dongles), pod(corev1.PodSucceeded, dongles)},
		Claims: []*corev1.PersistentVolumeClaim{claim(&gold, "1Gi"), claim(&gold, "2Gi"), claim(nil, "5Gi")},
		Counts: map[corev1.ResourceName]int{"count/replicasets.apps": 3},
	}
	hard := corev1.ResourceList{}
	want := map[corev1.ResourceName]string{
		"requests.example.com/dongle": "4", "requests.hugepages-2Mi": "8Mi",
		"gold.storageclass.storage.k8s.io/persistentvolumeclaims": "2", "gold.storageclass.storage.k8s.io/requests.storage": "3Gi",
		"silver.storageclass.storage.k8s.io/persistentvolumeclaims": "0",
		"count/replicasets.apps":                                    "3", "count/pods": "2", corev1.ResourcePersistentVolumeClaims: "3",
	}
	for name := range want {
		hard[name] = resource.MustParse("100")
	}
	hard["count/jobs.batch"] = resource.MustParse("1")         // not counted: left out
	hard["requests.kubernetes.io/x"] = resource.MustParse("1") // not an extended resource
	used := Usage(hard, o)
	for name, w := range want {
		if q, ok := used[name]; !ok || q.Cmp(resource.MustParse(w)) != 0 {
			t.Errorf("%s = %v (present %v), want %s", name, q.String(), ok, w)
		}
	}
	for _, name := range []corev1.ResourceName{"count/jobs.batch", "requests.kubernetes.io/x"} {
		if q, ok := used[name]; ok {
			t.Errorf("%s = %s, want it left out", name, q.String())
		}
	}
}
