package statefulsets

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/registrytest"
)

func statefulSet() *appsv1.StatefulSet {
	labels := map[string]string{"app": "db"}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
		Spec: appsv1.StatefulSetSpec{
			ServiceName: "db",
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "db", Image: "postgres:17",
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/postgresql"}},
				}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
		},
	}
}

func TestDefault(t *testing.T) {
	s := statefulSet()
	Resource().Default(s)
	spec := s.Spec
	if *spec.Replicas != 1 || *spec.RevisionHistoryLimit != 10 || spec.PodManagementPolicy != appsv1.OrderedReadyPodManagement {
		t.Errorf("defaults: %+v", spec)
	}
	if spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType || *spec.UpdateStrategy.RollingUpdate.Partition != 0 {
		t.Errorf("update strategy = %+v", spec.UpdateStrategy)
	}
	if p := spec.PersistentVolumeClaimRetentionPolicy; p.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType || p.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		t.Errorf("retention = %+v", p)
	}
	c := spec.VolumeClaimTemplates[0]
	if c.APIVersion != "v1" || c.Kind != "PersistentVolumeClaim" || *c.Spec.VolumeMode != corev1.PersistentVolumeFilesystem || c.Status.Phase != corev1.ClaimPending {
		t.Errorf("claim template = %+v", c)
	}

	onDelete := statefulSet()
	onDelete.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType
	Resource().Default(onDelete)
	if onDelete.Spec.UpdateStrategy.RollingUpdate != nil {
		t.Error("OnDelete got a rollingUpdate")
	}
}

func TestValidate(t *testing.T) {
	r := Resource()
	if r.NameValidation != registry.NameLabel {
		t.Errorf("statefulset names are DNS labels")
	}
	tests := []struct {
		name   string
		change func(*appsv1.StatefulSet)
		want   []string
	}{
		{"valid with claim mount", func(*appsv1.StatefulSet) {}, nil},
		{"mount without claim", func(s *appsv1.StatefulSet) { s.Spec.VolumeClaimTemplates = nil }, []string{"FieldValueNotFound spec.template.spec.containers[0].volumeMounts[0].name"}},
		{"parallel", func(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement }, nil},
		{"bad policy", func(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = "Random" }, []string{"FieldValueInvalid spec.podManagementPolicy"}},
		{"bad strategy", func(s *appsv1.StatefulSet) { s.Spec.UpdateStrategy.Type = "Always" }, []string{"FieldValueInvalid spec.updateStrategy"}},
		{"ondelete with rolling update", func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType, RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{}}
		}, []string{"FieldValueInvalid spec.updateStrategy.rollingUpdate"}},
		{"negative partition", func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](-1)}
		}, []string{"FieldValueInvalid spec.updateStrategy.rollingUpdate.partition"}},
		{"zero max unavailable", func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(0))}
		}, []string{"FieldValueInvalid spec.updateStrategy.rollingUpdate.maxUnavailable"}},
		{"bad retention", func(s *appsv1.StatefulSet) {
			s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: "Keep", WhenScaled: "Delete"}
		}, []string{"FieldValueNotSupported spec.persistentVolumeClaimRetentionPolicy.whenDeleted"}},
		{"negative ordinal", func(s *appsv1.StatefulSet) { s.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: -1} }, []string{"FieldValueInvalid spec.ordinals.start"}},
		{"empty selector", func(s *appsv1.StatefulSet) { s.Spec.Selector = &metav1.LabelSelector{} }, []string{"FieldValueInvalid spec.selector"}},
		{"mismatch", func(s *appsv1.StatefulSet) { s.Spec.Template.Labels = nil }, []string{"FieldValueInvalid spec.template.metadata.labels"}},
		{"restart on failure", func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure }, []string{"FieldValueNotSupported spec.template.spec.restartPolicy"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := statefulSet()
			tt.change(s)
			registrytest.ExpectErrors(t, registrytest.Validate(r, s, nil), tt.want...)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	r := Resource()
	old := statefulSet()
	r.Default(old)

	allowed := statefulSet()
	allowed.Spec.Replicas = ptr.To[int32](3)
	allowed.Spec.Template.Spec.Containers[0].Image = "postgres:18"
	allowed.Spec.MinReadySeconds = 5
	allowed.Spec.RevisionHistoryLimit = ptr.To[int32](2)
	allowed.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType
	registrytest.ExpectErrors(t, registrytest.Validate(r, allowed, old))

	grown := statefulSet()
	grown.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
	errs := registrytest.Validate(r, grown, old)
	registrytest.ExpectErrors(t, errs, "FieldValueForbidden spec")
	registrytest.ExpectDetail(t, errs, "spec", "updates to statefulset spec for fields other than 'replicas'")

	renamed := statefulSet()
	renamed.Spec.ServiceName = "other"
	registrytest.ExpectErrors(t, registrytest.Validate(r, renamed, old), "FieldValueForbidden spec")

	// A stored object read back without the claim templates' apiVersion
	// and kind (as protobuf storage does) may still be scaled.
	stored := old.DeepCopy()
	stored.Spec.VolumeClaimTemplates[0].TypeMeta = metav1.TypeMeta{}
	scaled := statefulSet()
	r.Default(scaled)
	scaled.Spec.Replicas = ptr.To[int32](2)
	registrytest.ExpectErrors(t, registrytest.Validate(r, scaled, stored))
}

func TestRowAndScale(t *testing.T) {
	r := Resource()
	if !r.HasStatus || r.Scale == nil || r.ShortNames[0] != "sts" || r.Categories[0] != "all" {
		t.Fatalf("resource = %+v", r)
	}
	now := time.Now()
	s := statefulSet()
	s.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
	s.Spec.Replicas = ptr.To[int32](3)
	s.Status.ReadyReplicas = 2
	row := r.Row(s, now)
	registrytest.CheckTable(t, r, row)
	want := []interface{}{"db", "2/3", "60s", "db", "postgres:17"}
	for i := range want {
		if row[i] != want[i] {
			t.Errorf("cell %d (%s) = %#v, want %#v", i, r.Columns[i].Name, row[i], want[i])
		}
	}
	s.Status.Replicas = 2
	if r.Scale.SpecReplicas(s) != 3 || r.Scale.StatusReplicas(s) != 2 || r.Scale.Selector(s) != "app=db" {
		t.Error("scale accessor")
	}
}
