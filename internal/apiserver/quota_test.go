package apiserver_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A namespace's ResourceQuota, once its status is known, refuses what
// would exceed it with upstream's messages and counts what it admits.
func TestQuotaAdmission(t *testing.T) {
	_, client := newClient(t, "q")
	ctx := testContext(t)
	hard := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1"), corev1.ResourceRequestsCPU: resource.MustParse("1"),
		corev1.ResourceConfigMaps: resource.MustParse("2"), "count/secrets": resource.MustParse("0")}
	q, err := client.CoreV1().ResourceQuotas("q").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "quota"},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := func(name, cpu string) *corev1.Pod {
		c := corev1.Container{Name: "c", Image: "busybox"}
		if cpu != "" {
			c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
		}
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
	}
	// Without a status (the quota controller has not counted yet) the
	// quota is not enforced, as upstream's.
	if _, err := client.CoreV1().Pods("q").Create(ctx, pod("early", ""), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatalf("a pod before the quota's status: %v", err)
	}
	q.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0"),
		corev1.ResourceRequestsCPU: resource.MustParse("0"), corev1.ResourceConfigMaps: resource.MustParse("1"), "count/secrets": resource.MustParse("0")}}
	if _, err := client.CoreV1().ResourceQuotas("q").UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	refused := func(what string, err error, want string) {
		t.Helper()
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want forbidden with %q", what, err, want)
		}
	}
	_, err = client.CoreV1().Pods("q").Create(ctx, pod("no-requests", ""), metav1.CreateOptions{})
	refused("a pod without a cpu request", err, "failed quota: quota: must specify requests.cpu for: c")
	if _, err := client.CoreV1().Pods("q").Create(ctx, pod("first", "500m"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := client.CoreV1().ResourceQuotas("q").Get(ctx, "quota", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if used := got.Status.Used[corev1.ResourcePods]; used.Value() != 1 {
		t.Errorf("used pods = %s after one pod, want 1", used.String())
	}
	if used := got.Status.Used[corev1.ResourceRequestsCPU]; used.MilliValue() != 500 {
		t.Errorf("used requests.cpu = %s after one pod, want 500m", used.String())
	}
	_, err = client.CoreV1().Pods("q").Create(ctx, pod("second", "100m"), metav1.CreateOptions{})
	refused("a second pod", err, "exceeded quota: quota, requested: pods=1, used: pods=1, limited: pods=1")

	if _, err := client.CoreV1().ConfigMaps("q").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = client.CoreV1().ConfigMaps("q").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm2"}}, metav1.CreateOptions{})
	refused("a third configmap", err, "exceeded quota: quota, requested: configmaps=1, used: configmaps=2, limited: configmaps=2")
	_, err = client.CoreV1().Secrets("q").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{})
	refused("a secret", err, "exceeded quota: quota, requested: count/secrets=1, used: count/secrets=0, limited: count/secrets=0")
	// Other namespaces are not counted.
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Secrets("other").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("a secret in another namespace: %v", err)
	}
}
