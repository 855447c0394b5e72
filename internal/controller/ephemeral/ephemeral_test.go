package ephemeral_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"orch/internal/controller/controllertest"
	"orch/internal/controller/ephemeral"
	"orch/internal/controller/pvcprotection"
	"orch/internal/envtest"
)

// TestClaims: a pod's ephemeral volume gets its claim, owned by the pod,
// made again when deleted; a claim of that name that is not the pod's is
// reported on the pod and left alone.
func TestClaims(t *testing.T) {
	env := controllertest.New(t, "app")
	// Claims carry the protection finalizer; its controller lets a claim
	// no scheduled pod uses go.
	env.Start(t, ephemeral.New(env.Context), pvcprotection.New(env.Context))
	client, ctx := env.Client, t.Context()
	claims := client.CoreV1().PersistentVolumeClaims("app")

	if _, err := claims.Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "web-taken"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	template := &corev1.PersistentVolumeClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": "scratch"}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}}},
	}
	pod, err := client.CoreV1().Pods("app").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		Volumes: []corev1.Volume{
			{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: template}}},
			{Name: "taken", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: template}}},
		},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	var claim *corev1.PersistentVolumeClaim
	envtest.EventuallyTrue(t, "claim web-scratch", func() bool {
		claim, err = claims.Get(ctx, "web-scratch", metav1.GetOptions{})
		return err == nil
	})
	owner := metav1.GetControllerOf(claim)
	size := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	if owner == nil || owner.UID != pod.UID || owner.Kind != "Pod" || owner.BlockOwnerDeletion == nil || !*owner.BlockOwnerDeletion ||
		claim.Labels["app"] != "web" || claim.Annotations["note"] != "scratch" || size.String() != "2Gi" ||
		claim.Spec.AccessModes[0] != corev1.ReadWriteOncePod {
		t.Errorf("claim %+v", claim)
	}
	envtest.EventuallyTrue(t, "a FailedBinding event for the claim the pod does not own", func() bool {
		list, err := client.CoreV1().Events("app").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("involvedObject.name", "web").String()})
		if err != nil {
			return false
		}
		for _, e := range list.Items {
			if e.Reason == "FailedBinding" && e.Message == "PVC app/web-taken was not created for pod app/web (pod is not owner)" {
				return true
			}
		}
		return false
	})
	if taken, err := claims.Get(ctx, "web-taken", metav1.GetOptions{}); err != nil || len(taken.OwnerReferences) != 0 {
		t.Errorf("the other claim was changed: %v %v", taken, err)
	}

	if err := claims.Delete(ctx, "web-scratch", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.EventuallyTrue(t, "claim web-scratch made again", func() bool {
		again, err := claims.Get(ctx, "web-scratch", metav1.GetOptions{})
		return err == nil && again.UID != claim.UID && again.DeletionTimestamp == nil
	})
	if _, err := claims.Get(ctx, "web-other", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("unexpected claim: %v", err)
	}
}
