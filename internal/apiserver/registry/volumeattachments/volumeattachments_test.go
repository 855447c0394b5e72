package volumeattachments

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

func attachment(attacher string, pv *string, node string) *storagev1.VolumeAttachment {
	return &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: "csi-123"},
		Spec:       storagev1.VolumeAttachmentSpec{Attacher: attacher, Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: pv}, NodeName: node},
	}
}

func TestValidate(t *testing.T) {
	r := Resource()
	both := attachment("csi.example.com", ptr.To("pv-1"), "node-1")
	both.Spec.Source.InlineVolumeSpec = &corev1.PersistentVolumeSpec{}
	badStatus := attachment("csi.example.com", ptr.To("pv-1"), "node-1")
	badStatus.Status.AttachError = &storagev1.VolumeError{ErrorCode: ptr.To[int32](-1)}
	tests := []struct {
		name string
		va   *storagev1.VolumeAttachment
		want []string
	}{
		{"valid", attachment("csi.example.com", ptr.To("pv-1"), "node-1"), nil},
		{"no attacher", attachment("", ptr.To("pv-1"), "node-1"), []string{"FieldValueRequired spec.attacher", "FieldValueInvalid spec.attacher"}},
		{"no source", attachment("csi.example.com", nil, "node-1"), []string{"FieldValueRequired spec.source"}},
		{"both sources", both, []string{"FieldValueForbidden spec.source"}},
		{"empty pv", attachment("csi.example.com", ptr.To(""), "node-1"), []string{"FieldValueRequired spec.source.persistentVolumeName"}},
		{"bad node", attachment("csi.example.com", ptr.To("pv"), "Node_1"), []string{"FieldValueInvalid spec.nodeName"}},
		{"bad status", badStatus, []string{"FieldValueInvalid status.attachError.errorCode"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectErrors(t, registrytest.Validate(r, tt.va, nil), tt.want...)
		})
	}
	old := attachment("csi.example.com", ptr.To("pv-1"), "node-1")
	registrytest.ExpectErrors(t, registrytest.Validate(r, attachment("csi.example.com", ptr.To("pv-1"), "node-2"), old), "FieldValueInvalid spec")
}

func TestPrepareAndRow(t *testing.T) {
	r := Resource()
	if !r.HasStatus {
		t.Error("volumeattachments have a status subresource")
	}
	va := attachment("csi.example.com", ptr.To("pv-1"), "node-1")
	va.Status.Attached = true
	r.PrepareForCreate(va)
	if va.Status.Attached {
		t.Error("status not reset on create")
	}
	va.Status.Attached = true
	now := time.Now()
	va.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
	row := r.Row(va, now)
	registrytest.CheckTable(t, r, row)
	want := []interface{}{"csi-123", "csi.example.com", "pv-1", "node-1", true, "60s"}
	for i := range want {
		if row[i] != want[i] {
			t.Errorf("cell %d = %#v, want %#v", i, row[i], want[i])
		}
	}
}
