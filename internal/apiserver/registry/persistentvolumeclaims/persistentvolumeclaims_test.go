package persistentvolumeclaims

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func newClaim(size string) *corev1.PersistentVolumeClaim {
	class := "local-path"
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &class,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}
	Resource().Default(pvc)
	return pvc
}

func TestDefaultAndValidate(t *testing.T) {
	pvc := newClaim("1Gi")
	Resource().PrepareForCreate(pvc)
	if *pvc.Spec.VolumeMode != corev1.PersistentVolumeFilesystem || pvc.Status.Phase != corev1.ClaimPending {
		t.Errorf("claim = %+v", pvc)
	}
	if errs := Resource().Validate(pvc); len(errs) != 0 {
		t.Errorf("valid claim rejected: %v", errs)
	}
	pvc.Spec.Resources.Requests = nil
	pvc.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{"ReadWriteSometimes"}
	var got []string
	for _, e := range Resource().Validate(pvc) {
		got = append(got, e.Type.String()+" "+e.Field)
	}
	want := []string{"Unsupported value spec.accessModes", "Required value spec.resources[storage]"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("errors = %v, want %v", got, want)
	}
}

func TestValidateUpdate(t *testing.T) {
	bound := func(size string) *corev1.PersistentVolumeClaim {
		pvc := newClaim(size)
		pvc.Spec.VolumeName = "pv1"
		pvc.Status.Phase = corev1.ClaimBound
		pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
		return pvc
	}
	// classless is a claim of class (nil when "").
	classless := func(class string) *corev1.PersistentVolumeClaim {
		pvc := newClaim("1Gi")
		pvc.Spec.StorageClassName = nil
		if class != "" {
			pvc.Spec.StorageClassName = &class
		}
		return pvc
	}
	annotated := func(annotation, class string) *corev1.PersistentVolumeClaim {
		pvc := classless(class)
		pvc.Annotations = map[string]string{"volume.beta.kubernetes.io/storage-class": annotation}
		return pvc
	}
	cases := []struct {
		name     string
		old, new *corev1.PersistentVolumeClaim
		want     []string
	}{
		{"bind", newClaim("1Gi"), func() *corev1.PersistentVolumeClaim { c := newClaim("1Gi"); c.Spec.VolumeName = "pv1"; return c }(), nil},
		{"grow bound", bound("1Gi"), bound("2Gi"), nil},
		{"shrink below capacity", bound("2Gi"), bound("1Gi"), []string{"spec.resources.requests.storage"}},
		{"grow unbound", newClaim("1Gi"), newClaim("2Gi"), []string{"spec"}},
		{"class given to a claim without one", classless(""), classless("late"), nil},
		{"class changed", classless("early"), classless("late"), []string{"spec"}},
		{"class given, as the beta annotation says", annotated("fast", ""), annotated("fast", "fast"), nil},
		{"class given, not the beta annotation's", annotated("fast", ""), annotated("fast", "slow"), []string{"spec"}},
		{"change access modes", newClaim("1Gi"), func() *corev1.PersistentVolumeClaim {
			c := newClaim("1Gi")
			c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
			return c
		}(), []string{"spec"}},
	}
	for _, tc := range cases {
		var got []string
		for _, e := range Resource().ValidateUpdate(tc.new, tc.old) {
			got = append(got, e.Field)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: error fields = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRow(t *testing.T) {
	now := time.Now()
	pvc := newClaim("1Gi")
	pvc.CreationTimestamp = metav1.NewTime(now.Add(-2 * time.Minute))
	want := []interface{}{"data", "Pending", "", "", "", "local-path", "<unset>", "2m", "Filesystem"}
	if got := Resource().Row(pvc, now); !reflect.DeepEqual(got, want) {
		t.Errorf("pending row = %v\nwant  %v", got, want)
	}
	pvc.Spec.VolumeName = "pvc-123"
	pvc.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound,
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}
	want = []interface{}{"data", "Bound", "pvc-123", "1Gi", "RWO", "local-path", "<unset>", "2m", "Filesystem"}
	if got := Resource().Row(pvc, now); !reflect.DeepEqual(got, want) {
		t.Errorf("bound row = %v\nwant  %v", got, want)
	}
}
