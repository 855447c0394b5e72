package serviceaccounts

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPrepareForCreateCleansSecretRefs(t *testing.T) {
	sa := &corev1.ServiceAccount{Secrets: []corev1.ObjectReference{{Name: "tok", Namespace: "x", Kind: "Secret", UID: "u"}}}
	Resource().PrepareForCreate(sa)
	if want := []corev1.ObjectReference{{Name: "tok"}}; !reflect.DeepEqual(sa.Secrets, want) {
		t.Errorf("secrets = %v, want %v", sa.Secrets, want)
	}
}

func TestRow(t *testing.T) {
	now := time.Now()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", CreationTimestamp: metav1.NewTime(now.Add(-48 * time.Hour))}}
	want := []interface{}{"default", int64(0), "2d"}
	if got := Resource().Row(sa, now); !reflect.DeepEqual(got, want) {
		t.Errorf("row = %v, want %v", got, want)
	}
	if r := Resource(); r.ShortNames[0] != "sa" || len(r.Columns) != 3 {
		t.Errorf("unexpected resource %+v", r)
	}
}
