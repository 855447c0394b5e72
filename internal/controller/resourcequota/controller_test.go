package resourcequota_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/controller/controllertest"
	"orch/internal/controller/resourcequota"
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
	deadline := time.Now().Add(20 * time.Second)
	for {
		q, err := client.CoreV1().ResourceQuotas("q").Get(ctx, "quota", metav1.GetOptions{})
		ok := err == nil && len(q.Status.Hard) == len(hard)
		for name, v := range want {
			if got := q.Status.Used[name]; got.Cmp(resource.MustParse(v)) != 0 {
				ok = false
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("quota status %+v, want used %v", q.Status, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
