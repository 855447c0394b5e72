package apiserver_test

import (
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Pods created at once against a quota of two: two are admitted, the
// others refused, and status.used says two.
func TestQuotaHoldsUnderConcurrentCreates(t *testing.T) {
	_, client := newClient(t, "q")
	ctx := testContext(t)
	hard := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2")}
	q, err := client.CoreV1().ResourceQuotas("q").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "quota"},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}
	if _, err := client.CoreV1().ResourceQuotas("q").UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	created := 0
	for i := range 6 {
		wg.Go(func() {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i)}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
			if _, err := client.CoreV1().Pods("q").Create(ctx, pod, metav1.CreateOptions{}); err == nil {
				mu.Lock()
				created++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	got, err := client.CoreV1().ResourceQuotas("q").Get(ctx, "quota", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if used := got.Status.Used[corev1.ResourcePods]; created != 2 || used.Value() != 2 {
		t.Errorf("%d pods created, used pods %s; want 2 and 2", created, used.String())
	}
}
