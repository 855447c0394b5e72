package pvbinder_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/ptr"

	"orch/internal/controller/controllertest"
	"orch/internal/controller/pvbinder"
	"orch/internal/controller/pvcprotection"
	"orch/internal/controller/pvprotection"
	"orch/internal/envtest"
)

func TestBinding(t *testing.T) {
	env := controllertest.New(t, "app")
	// The claims and volumes carry protection finalizers (admission puts
	// them on); their controllers let a released claim and a deleted
	// volume go.
	env.Start(t, pvbinder.New(env.Context), pvcprotection.New(env.Context), pvprotection.New(env.Context))
	client := env.Context.Client
	ctx := t.Context()

	t.Run("smallest fitting volume", func(t *testing.T) {
		createVolume(t, client, "pv-big", "10Gi", "", corev1.PersistentVolumeReclaimRetain)
		createVolume(t, client, "pv-small", "1Gi", "", corev1.PersistentVolumeReclaimRetain)
		createVolume(t, client, "pv-fit", "3Gi", "", corev1.PersistentVolumeReclaimRetain)
		// Only Available volumes are candidates: let all three become so
		// first, in the binder's own informer (it matches from there).
		volumes := env.Context.Informers.Core().V1().PersistentVolumes().Lister()
		for _, name := range []string{"pv-big", "pv-small", "pv-fit"} {
			envtest.EventuallyTrue(t, name+" Available in the binder's cache", func() bool {
				pv, err := volumes.Get(name)
				return err == nil && pv.Status.Phase == corev1.VolumeAvailable
			})
		}
		createClaim(t, client, "data", "2Gi", ptr.To(""), "")
		claim := controllertest.WaitClaim(t, client, "app", "data", func(c *corev1.PersistentVolumeClaim) bool { return c.Status.Phase == corev1.ClaimBound })
		if claim.Spec.VolumeName != "pv-fit" {
			t.Fatalf("claim bound to %q, want pv-fit", claim.Spec.VolumeName)
		}
		got := claim.Status.Capacity[corev1.ResourceStorage]
		if got.Cmp(resource.MustParse("3Gi")) != 0 || len(claim.Status.AccessModes) != 1 || claim.Status.AccessModes[0] != corev1.ReadWriteOnce {
			t.Fatalf("claim status %+v, want the volume's capacity and access modes", claim.Status)
		}
		if claim.Annotations[volume.AnnBindCompleted] != "yes" || claim.Annotations[volume.AnnBoundByController] != "yes" {
			t.Fatalf("claim annotations %v", claim.Annotations)
		}
		pv := controllertest.WaitVolume(t, client, "pv-fit", func(pv *corev1.PersistentVolume) bool { return pv.Status.Phase == corev1.VolumeBound })
		if ref := pv.Spec.ClaimRef; ref == nil || ref.Name != "data" || ref.Namespace != "app" || ref.UID != claim.UID {
			t.Fatalf("volume claimRef %+v, want app/data with the claim's UID", ref)
		}
		if pv.Annotations[volume.AnnBoundByController] != "yes" {
			t.Fatalf("volume annotations %v", pv.Annotations)
		}
		controllertest.WaitVolume(t, client, "pv-small", func(pv *corev1.PersistentVolume) bool {
			return pv.Status.Phase == corev1.VolumeAvailable && pv.Spec.ClaimRef == nil
		})
	})

	t.Run("no volume and no class", func(t *testing.T) {
		createClaim(t, client, "huge", "100Gi", ptr.To(""), "")
		controllertest.WaitEvent(t, client, "app", "huge", "persistentvolume-controller", "FailedBinding", "no persistent volumes available for this claim and no storage class is set")
		if c := controllertest.WaitClaim(t, client, "app", "huge", func(*corev1.PersistentVolumeClaim) bool { return true }); c.Status.Phase != corev1.ClaimPending || c.Spec.VolumeName != "" {
			t.Fatalf("claim %s %q, want Pending and unbound", c.Status.Phase, c.Spec.VolumeName)
		}
	})

	t.Run("claim naming its volume", func(t *testing.T) {
		createVolume(t, client, "pv-named", "5Gi", "", corev1.PersistentVolumeReclaimRetain)
		createClaim(t, client, "named", "1Gi", ptr.To(""), "pv-named")
		claim := controllertest.WaitClaim(t, client, "app", "named", func(c *corev1.PersistentVolumeClaim) bool { return c.Status.Phase == corev1.ClaimBound })
		if claim.Spec.VolumeName != "pv-named" || claim.Annotations[volume.AnnBoundByController] != "" {
			t.Fatalf("claim %q annotations %v: want pv-named, bound by the user", claim.Spec.VolumeName, claim.Annotations)
		}
	})

	t.Run("wait for first consumer", func(t *testing.T) {
		if _, err := client.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local"},
			Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		createVolume(t, client, "pv-local", "1Gi", "local", corev1.PersistentVolumeReclaimRetain)
		claim := createClaim(t, client, "late", "1Gi", ptr.To("local"), "")
		controllertest.WaitEvent(t, client, "app", "late", "persistentvolume-controller", "WaitForFirstConsumer", "waiting for first consumer to be created before binding")
		controllertest.WaitVolume(t, client, "pv-local", func(pv *corev1.PersistentVolume) bool { return pv.Status.Phase == corev1.VolumeAvailable })
		if pv, _ := client.CoreV1().PersistentVolumes().Get(ctx, "pv-local", metav1.GetOptions{}); pv.Spec.ClaimRef != nil {
			t.Fatalf("a WaitForFirstConsumer claim was bound before any pod was scheduled: %+v", pv.Spec.ClaimRef)
		}
		// The scheduler has placed a pod using the claim: it reserves the
		// volume (internal/scheduler bindVolumes) and the binder completes it.
		pv, _ := client.CoreV1().PersistentVolumes().Get(ctx, "pv-local", metav1.GetOptions{})
		reserved, _, err := volume.GetBindVolumeToClaim(pv, claim)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.CoreV1().PersistentVolumes().Update(ctx, reserved, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		bound := controllertest.WaitClaim(t, client, "app", "late", func(c *corev1.PersistentVolumeClaim) bool { return c.Status.Phase == corev1.ClaimBound })
		if bound.Spec.VolumeName != "pv-local" {
			t.Fatalf("claim bound to %q, want pv-local", bound.Spec.VolumeName)
		}
	})

	t.Run("default class given retroactively", func(t *testing.T) {
		// No default class yet: the claim keeps a nil class.
		createClaim(t, client, "classless", "500Gi", nil, "") // larger than every volume
		controllertest.WaitEvent(t, client, "app", "classless", "persistentvolume-controller", "FailedBinding", "no persistent volumes available for this claim and no storage class is set")
		if _, err := client.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "default",
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}}, Provisioner: "example.com/none"}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		controllertest.WaitClaim(t, client, "app", "classless", func(c *corev1.PersistentVolumeClaim) bool {
			return c.Spec.StorageClassName != nil && *c.Spec.StorageClassName == "default"
		})
		if err := client.StorageV1().StorageClasses().Delete(ctx, "default", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("reclaim policies", func(t *testing.T) {
		createVolume(t, client, "pv-keep", "7Gi", "keep", corev1.PersistentVolumeReclaimRetain)
		createVolume(t, client, "pv-drop", "7Gi", "drop", corev1.PersistentVolumeReclaimDelete)
		createClaim(t, client, "keep", "7Gi", ptr.To("keep"), "")
		createClaim(t, client, "drop", "7Gi", ptr.To("drop"), "")
		for _, name := range []string{"keep", "drop"} {
			controllertest.WaitClaim(t, client, "app", name, func(c *corev1.PersistentVolumeClaim) bool { return c.Status.Phase == corev1.ClaimBound })
			if err := client.CoreV1().PersistentVolumeClaims("app").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		controllertest.WaitVolume(t, client, "pv-keep", func(pv *corev1.PersistentVolume) bool { return pv.Status.Phase == corev1.VolumeReleased })
		envtest.EventuallyTrue(t, "pv-drop to be deleted", func() bool {
			_, err := client.CoreV1().PersistentVolumes().Get(ctx, "pv-drop", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
	})
}

func createVolume(t *testing.T, client kubernetes.Interface, name, size, class string, policy corev1.PersistentVolumeReclaimPolicy) {
	t.Helper()
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
		Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}, StorageClassName: class,
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, PersistentVolumeReclaimPolicy: policy,
		PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + name}},
	}}
	if _, err := client.CoreV1().PersistentVolumes().Create(t.Context(), pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createClaim(t *testing.T, client kubernetes.Interface, name, size string, class *string, volumeName string) *corev1.PersistentVolumeClaim {
	t.Helper()
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
		StorageClassName: class, VolumeName: volumeName, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
	}}
	created, err := client.CoreV1().PersistentVolumeClaims("app").Create(t.Context(), claim, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}
