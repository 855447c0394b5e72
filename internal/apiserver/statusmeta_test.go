package apiserver_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// What metadata a patch of /status changes depends on the resource, as
// upstream's status strategies: a job's and most others' status patch
// changes labels and annotations too, a pod's changes neither, a
// deployment's its annotations but not its labels.
func TestStatusWritesMetadata(t *testing.T) {
	_, client := newClient(t, "sm")
	ctx := testContext(t)
	patch := []byte(`{"metadata":{"labels":{"patched":"yes"},"annotations":{"patched":"yes"}},"status":{}}`)
	labels := map[string]string{"app": "x"}
	podSpec := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}

	if _, err := client.BatchV1().Jobs("sm").Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j"}, Spec: batchv1.JobSpec{Template: podSpec}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	job, err := client.BatchV1().Jobs("sm").Patch(ctx, "j", types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatal(err)
	}
	if job.Labels["patched"] != "yes" || job.Annotations["patched"] != "yes" {
		t.Errorf("job after a status patch: labels %v annotations %v, want both patched", job.Labels, job.Annotations)
	}

	if _, err := client.CoreV1().Pods("sm").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: podSpec.Spec}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod, err := client.CoreV1().Pods("sm").Patch(ctx, "p", types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatal(err)
	}
	if pod.Labels["patched"] != "" || pod.Annotations["patched"] != "" {
		t.Errorf("pod after a status patch: labels %v annotations %v, want neither patched", pod.Labels, pod.Annotations)
	}

	always := *podSpec.DeepCopy()
	always.Spec.RestartPolicy = corev1.RestartPolicyAlways
	if _, err := client.AppsV1().Deployments("sm").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: always}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d, err := client.AppsV1().Deployments("sm").Patch(ctx, "d", types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatal(err)
	}
	if d.Labels["patched"] != "" || d.Annotations["patched"] != "yes" {
		t.Errorf("deployment after a status patch: labels %v annotations %v, want only the annotation patched", d.Labels, d.Annotations)
	}
}

// A pod's generation starts at 1, stays there when the scheduler binds it
// and moves with each change of its spec, as upstream's.
func TestPodGeneration(t *testing.T) {
	_, client := newClient(t, "gen")
	ctx := testContext(t)
	pod, err := client.CoreV1().Pods("gen").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: corev1.PodSpec{ActiveDeadlineSeconds: ptr.To[int64](100), Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Generation != 1 {
		t.Errorf("generation after create = %d, want 1", pod.Generation)
	}
	if err := client.CoreV1().Pods("gen").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if pod, err = client.CoreV1().Pods("gen").Get(ctx, "p", metav1.GetOptions{}); err != nil || pod.Generation != 1 || pod.Spec.NodeName != "n1" {
		t.Fatalf("after binding: generation %d node %q (%v), want 1 on n1", pod.Generation, pod.Spec.NodeName, err)
	}
	pod.Spec.ActiveDeadlineSeconds = ptr.To[int64](99)
	if pod, err = client.CoreV1().Pods("gen").Update(ctx, pod, metav1.UpdateOptions{}); err != nil || pod.Generation != 2 {
		t.Fatalf("after a spec update: generation %d (%v), want 2", pod.Generation, err)
	}
}
