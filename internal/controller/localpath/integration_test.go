package localpath_test

import (
	"os"
	"path/filepath"
	"strings"
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
	"orch/internal/controller/localpath"
	"orch/internal/controller/pvbinder"
	"orch/internal/controller/pvcprotection"
	"orch/internal/controller/pvprotection"
	"orch/internal/envtest"
	shared "orch/internal/localpath"
)

// TestLifecycle runs the provisioner with the binder and the protection
// controllers on a real apiserver, and node n1's Cleaner on a temporary
// directory: a claim whose node was picked gets a volume there, is bound,
// grows, and its directory and volume go when it is deleted (Delete) or
// stay (Retain).
func TestLifecycle(t *testing.T) {
	env := controllertest.New(t, "app")
	root := t.TempDir()
	env.Start(t, localpath.New(env.Context, root), pvbinder.New(env.Context), pvcprotection.New(env.Context), pvprotection.New(env.Context),
		shared.NewCleaner(env.Client, "n1", env.Log))
	client, ctx := env.Client, t.Context()
	if _, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1",
		Labels: map[string]string{corev1.LabelHostname: "host-1"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createClass(t, client, "local-path", corev1.PersistentVolumeReclaimDelete, storagev1.VolumeBindingWaitForFirstConsumer, true)
	createClass(t, client, "keep", corev1.PersistentVolumeReclaimRetain, storagev1.VolumeBindingWaitForFirstConsumer, false)
	createClass(t, client, "now", corev1.PersistentVolumeReclaimDelete, storagev1.VolumeBindingImmediate, true)

	t.Run("provision, expand, delete", func(t *testing.T) {
		claim := createClaim(t, client, "data", "local-path", "n1")
		claim = controllertest.WaitClaim(t, client, "app", "data", func(c *corev1.PersistentVolumeClaim) bool { return c.Status.Phase == corev1.ClaimBound })
		pv := controllertest.WaitVolume(t, client, claim.Spec.VolumeName, func(pv *corev1.PersistentVolume) bool { return pv.Status.Phase == corev1.VolumeBound })
		wantPath := filepath.Join(root, "pvc-"+string(claim.UID)+"_app_data")
		if pv.Name != "pvc-"+string(claim.UID) || pv.Spec.Local == nil || pv.Spec.Local.Path != wantPath {
			t.Fatalf("volume %s at %+v, want pvc-UID at %s", pv.Name, pv.Spec.Local, wantPath)
		}
		terms := pv.Spec.NodeAffinity.Required.NodeSelectorTerms
		if len(terms) != 1 || terms[0].MatchExpressions[0].Key != corev1.LabelHostname || terms[0].MatchExpressions[0].Values[0] != "host-1" {
			t.Errorf("node affinity %+v, want hostname host-1", terms)
		}
		capacity := pv.Spec.Capacity[corev1.ResourceStorage]
		if capacity.Cmp(resource.MustParse("1Gi")) != 0 || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete ||
			pv.Labels[shared.NodeLabel] != "n1" || pv.Annotations[volume.AnnDynamicallyProvisioned] != shared.Provisioner ||
			!strings.Contains(strings.Join(pv.Finalizers, ","), shared.Finalizer) {
			t.Errorf("volume %+v", pv)
		}
		controllertest.WaitEvent(t, client, "app", "data", shared.Provisioner, "ProvisioningSucceeded", "Successfully provisioned volume "+pv.Name)
		// The kubelet makes the directory when a pod first uses it.
		if err := shared.Ensure(pv); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(wantPath, "file"), []byte("data"), 0o644); err != nil {
			t.Fatal(err)
		}

		claims := client.CoreV1().PersistentVolumeClaims("app")
		envtest.Update(t, "data", claims.Get, claims.Update, func(c *corev1.PersistentVolumeClaim) {
			c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("3Gi")
		})
		controllertest.WaitVolume(t, client, pv.Name, func(pv *corev1.PersistentVolume) bool {
			q := pv.Spec.Capacity[corev1.ResourceStorage]
			return q.Cmp(resource.MustParse("3Gi")) == 0
		})
		controllertest.WaitClaim(t, client, "app", "data", func(c *corev1.PersistentVolumeClaim) bool {
			q := c.Status.Capacity[corev1.ResourceStorage]
			return q.Cmp(resource.MustParse("3Gi")) == 0
		})

		if err := client.CoreV1().PersistentVolumeClaims("app").Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		envtest.EventuallyTrue(t, "the volume deleted", func() bool {
			_, err := client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
		if _, err := os.Stat(wantPath); !os.IsNotExist(err) {
			t.Errorf("directory %s still there (%v)", wantPath, err)
		}
	})

	t.Run("retain keeps the directory", func(t *testing.T) {
		claim := createClaim(t, client, "kept", "keep", "n1")
		claim = controllertest.WaitClaim(t, client, "app", "kept", func(c *corev1.PersistentVolumeClaim) bool { return c.Status.Phase == corev1.ClaimBound })
		pv := controllertest.WaitVolume(t, client, claim.Spec.VolumeName, func(*corev1.PersistentVolume) bool { return true })
		if len(pv.Finalizers) != 1 || pv.Finalizers[0] != "kubernetes.io/pv-protection" {
			t.Errorf("finalizers %v, want pv-protection only", pv.Finalizers)
		}
		if err := shared.Ensure(pv); err != nil {
			t.Fatal(err)
		}
		if err := client.CoreV1().PersistentVolumeClaims("app").Delete(ctx, "kept", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		controllertest.WaitVolume(t, client, pv.Name, func(pv *corev1.PersistentVolume) bool { return pv.Status.Phase == corev1.VolumeReleased })
		if _, err := os.Stat(pv.Spec.Local.Path); err != nil {
			t.Errorf("a retained volume's directory: %v", err)
		}
	})

	t.Run("immediate class refused", func(t *testing.T) {
		createClaim(t, client, "early", "now", "")
		controllertest.WaitEvent(t, client, "app", "early", shared.Provisioner, "ProvisioningFailed",
			`failed to provision volume with StorageClass "now": cannot provision a local-path volume: StorageClass "now" must have volumeBindingMode WaitForFirstConsumer, so that the volume is made on its pod's node`)
	})

	t.Run("growing needs an expandable class", func(t *testing.T) {
		createClaim(t, client, "fixed", "keep", "n1")
		controllertest.WaitClaim(t, client, "app", "fixed", func(c *corev1.PersistentVolumeClaim) bool { return c.Status.Phase == corev1.ClaimBound })
		c, err := client.CoreV1().PersistentVolumeClaims("app").Get(ctx, "fixed", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
		_, err = client.CoreV1().PersistentVolumeClaims("app").Update(ctx, c, metav1.UpdateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "the storageclass that provisions the pvc must support resize") {
			t.Errorf("growing a claim of a class without allowVolumeExpansion: %v, want 403", err)
		}
	})
}

func createClass(t testing.TB, client kubernetes.Interface, name string, policy corev1.PersistentVolumeReclaimPolicy, mode storagev1.VolumeBindingMode, expand bool) {
	t.Helper()
	_, err := client.StorageV1().StorageClasses().Create(t.Context(), &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name},
		Provisioner: shared.Provisioner, ReclaimPolicy: &policy, VolumeBindingMode: &mode, AllowVolumeExpansion: &expand}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// createClaim makes a 1Gi claim of class; node, when set, is what the
// scheduler writes once it has picked the claim's pod's node.
func createClaim(t testing.TB, client kubernetes.Interface, name, class, node string) *corev1.PersistentVolumeClaim {
	t.Helper()
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
		StorageClassName: ptr.To(class),
		AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}}
	if node != "" {
		claim.Annotations = map[string]string{volume.AnnSelectedNode: node}
	}
	created, err := client.CoreV1().PersistentVolumeClaims("app").Create(t.Context(), claim, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}
