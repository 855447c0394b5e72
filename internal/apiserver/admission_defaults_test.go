package apiserver_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"orch/internal/envtest"
)

// DefaultStorageClass and DefaultIngressClass fill in the default class
// at admission; an explicit "" or a class annotation is left alone (which
// of several defaults wins: TestNewer).
func TestDefaultClassesAtAdmission(t *testing.T) {
	_, client := newClient(t, "dc")
	ctx := testContext(t)
	for _, name := range []string{"standard"} {
		sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}}, Provisioner: "example.com/none"}
		if _, err := client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		ic := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name,
			Annotations: map[string]string{"ingressclass.kubernetes.io/is-default-class": "true"}}, Spec: networkingv1.IngressClassSpec{Controller: "example.com/none"}}
		if _, err := client.NetworkingV1().IngressClasses().Create(ctx, ic, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(name string, class *string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: class, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	}
	got, err := client.CoreV1().PersistentVolumeClaims("dc").Create(ctx, claim("unset", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := ptr.Deref(got.Spec.StorageClassName, "<nil>"); c != "standard" {
		t.Errorf("a claim without a class got %q, want the default, standard", c)
	}
	if got, err = client.CoreV1().PersistentVolumeClaims("dc").Create(ctx, claim("none", ptr.To("")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	} else if c := ptr.Deref(got.Spec.StorageClassName, "<nil>"); c != "" {
		t.Errorf(`a claim of class "" got %q`, c)
	}

	ingress := func(name string, annotations map[string]string) *networkingv1.Ingress {
		return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}, Spec: networkingv1.IngressSpec{
			DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}
	}
	ing, err := client.NetworkingV1().Ingresses("dc").Create(ctx, ingress("unset", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := ptr.Deref(ing.Spec.IngressClassName, "<nil>"); c != "standard" {
		t.Errorf("an ingress without a class got %q, want standard", c)
	}
	if ing, err = client.NetworkingV1().Ingresses("dc").Create(ctx, ingress("annotated", map[string]string{"kubernetes.io/ingress.class": "other"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	} else if ing.Spec.IngressClassName != nil {
		t.Errorf("an ingress with a class annotation got class %q", *ing.Spec.IngressClassName)
	}
}

// AlwaysPullImages, off by default, makes every container of a new pod
// pull its image.
func TestAlwaysPullImages(t *testing.T) {
	ctx := testContext(t)
	pod := plainPod("p")
	pod.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
	pod.Spec.InitContainers = []corev1.Container{{Name: "i", Image: "busybox", ImagePullPolicy: corev1.PullNever}}

	_, off := newClient(t, "ap")
	got, err := off.CoreV1().Pods("ap").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := got.Spec.Containers[0].ImagePullPolicy; p != corev1.PullIfNotPresent {
		t.Errorf("by default the pull policy became %s", p)
	}
	_, on := newClientWith(t, "ap", envtest.Options{EnableAdmissionPlugins: []string{"AlwaysPullImages"}})
	if got, err = on.CoreV1().Pods("ap").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if a, b := got.Spec.Containers[0].ImagePullPolicy, got.Spec.InitContainers[0].ImagePullPolicy; a != corev1.PullAlways || b != corev1.PullAlways {
		t.Errorf("with AlwaysPullImages the pull policies are %s and %s, want Always", a, b)
	}
}

// StorageObjectInUseProtection, on by default, puts the protection
// finalizers on new claims and volumes (their controllers take them off).
func TestStorageObjectInUseProtection(t *testing.T) {
	ctx := testContext(t)
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Finalizers: []string{"example.com/keep"}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	volume := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "v"}, Spec: corev1.PersistentVolumeSpec{
		Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/v"}}}}
	for _, tc := range []struct {
		name            string
		opts            envtest.Options
		claimF, volumeF []string
	}{
		{"default", envtest.Options{}, []string{"example.com/keep", "kubernetes.io/pvc-protection"}, []string{"kubernetes.io/pv-protection"}},
		{"disabled", envtest.Options{DisableAdmissionPlugins: []string{"StorageObjectInUseProtection"}}, []string{"example.com/keep"}, nil},
	} {
		_, client := newClientWith(t, "so", tc.opts)
		c, err := client.CoreV1().PersistentVolumeClaims("so").Create(ctx, claim, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		v, err := client.CoreV1().PersistentVolumes().Create(ctx, volume, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(c.Finalizers, tc.claimF) || !slices.Equal(v.Finalizers, tc.volumeF) {
			t.Errorf("%s: finalizers of the claim %v and the volume %v, want %v and %v", tc.name, c.Finalizers, v.Finalizers, tc.claimF, tc.volumeF)
		}
	}
}
