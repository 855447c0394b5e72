package resourcequota_test

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"orch/internal/controller/controllertest"
	"orch/internal/controller/resourcequota"
	"orch/internal/envtest"
)

func TestQuotaStatusCountsUsage(t *testing.T) {
	env := controllertest.New(t, "q")
	env.Start(t, resourcequota.New(env.Context))
	client := env.Context.Client
	ctx := t.Context()
	hard := corev1.ResourceList{
		corev1.ResourcePods: resource.MustParse("10"), corev1.ResourceRequestsCPU: resource.MustParse("4"),
		corev1.ResourceLimitsMemory: resource.MustParse("8Gi"), corev1.ResourceConfigMaps: resource.MustParse("5"),
		corev1.ResourceServicesNodePorts: resource.MustParse("2"),
	}
	if _, err := client.CoreV1().ResourceQuotas("q").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "quota"}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Objects made before the first count are recounted only when the
	// quota changes or something is deleted: wait for it, as clients do.
	envtest.EventuallyTrue(t, "the first count", func() bool {
		q, err := client.CoreV1().ResourceQuotas("q").Get(ctx, "quota", metav1.GetOptions{})
		return err == nil && len(q.Status.Used) == len(hard)
	})
	res := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}, Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}
	for _, name := range []string{"a", "b"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i", Resources: res}}}}
		if _, err := client.CoreV1().Pods("q").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.CoreV1().ConfigMaps("q").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Services("q").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "np"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := map[corev1.ResourceName]string{corev1.ResourcePods: "2", corev1.ResourceRequestsCPU: "1", corev1.ResourceLimitsMemory: "2Gi", corev1.ResourceConfigMaps: "1", corev1.ResourceServicesNodePorts: "1"}
	envtest.Eventually(t, fmt.Sprintf("used %v", want), func() (bool, error) {
		q, err := client.CoreV1().ResourceQuotas("q").Get(ctx, "quota", metav1.GetOptions{})
		if err != nil || len(q.Status.Hard) != len(hard) {
			return false, err
		}
		for name, v := range want {
			if got := q.Status.Used[name]; got.Cmp(resource.MustParse(v)) != 0 {
				return false, nil
			}
		}
		return true, nil
	})
}

// Object counts of other resources (count/replicasets.apps) and extended
// resources follow their objects: up on create, down on delete.
func TestQuotaCountsOtherResources(t *testing.T) {
	env := controllertest.New(t, "q")
	env.Start(t, resourcequota.New(env.Context))
	client := env.Context.Client
	ctx := t.Context()
	hard := corev1.ResourceList{"count/replicasets.apps": resource.MustParse("5"), "requests.example.com/dongle": resource.MustParse("3"),
		"count/widgets.example.com": resource.MustParse("1")}
	if _, err := client.CoreV1().ResourceQuotas("q").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "quota"},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	used := func(want map[corev1.ResourceName]string) {
		t.Helper()
		envtest.Eventually(t, fmt.Sprintf("used %v", want), func() (bool, error) {
			q, err := client.CoreV1().ResourceQuotas("q").Get(ctx, "quota", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if _, ok := q.Status.Used["count/widgets.example.com"]; ok {
				return false, fmt.Errorf("a resource the API does not serve is counted: %v", q.Status.Used)
			}
			for name, v := range want {
				if got, ok := q.Status.Used[name]; !ok || got.Cmp(resource.MustParse(v)) != 0 {
					return false, nil
				}
			}
			return true, nil
		})
	}
	used(map[corev1.ResourceName]string{"count/replicasets.apps": "0", "requests.example.com/dongle": "0"})
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs"}, Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](0),
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}}}
	if _, err := client.AppsV1().ReplicaSets("q").Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dongle := corev1.ResourceList{"example.com/dongle": resource.MustParse("2")}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i",
		Resources: corev1.ResourceRequirements{Requests: dongle, Limits: dongle}}}}}
	if _, err := client.CoreV1().Pods("q").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	used(map[corev1.ResourceName]string{"count/replicasets.apps": "1", "requests.example.com/dongle": "2"})
	if err := client.AppsV1().ReplicaSets("q").Delete(ctx, "rs", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	used(map[corev1.ResourceName]string{"count/replicasets.apps": "0"})
}

// Pods created one after another, as a ReplicationController makes them,
// against a quota of two: the controller's recounts never give back what
// admission charged, so the third is refused.
func TestQuotaHoldsWhileControllerRuns(t *testing.T) {
	env := controllertest.New(t, "q")
	env.Start(t, resourcequota.New(env.Context))
	client := env.Context.Client
	ctx := t.Context()
	hard := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2")}
	if _, err := client.CoreV1().ResourceQuotas("q").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "quota"},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.EventuallyTrue(t, "the first count", func() bool {
		q, err := client.CoreV1().ResourceQuotas("q").Get(ctx, "quota", metav1.GetOptions{})
		return err == nil && len(q.Status.Used) == 1
	})
	created := 0
	for i := range 5 {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i)}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
		if _, err := client.CoreV1().Pods("q").Create(ctx, pod, metav1.CreateOptions{}); err == nil {
			created++
		} else if !apierrors.IsForbidden(err) {
			t.Fatal(err)
		}
	}
	if created != 2 {
		t.Errorf("%d pods created against a quota of 2", created)
	}
}
