package secrets

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDefault(t *testing.T) {
	s := &corev1.Secret{StringData: map[string]string{"password": "hunter2"}, Data: map[string][]byte{"user": []byte("bob")}}
	Resource().Default(s)
	if s.Type != corev1.SecretTypeOpaque {
		t.Errorf("type = %q, want Opaque", s.Type)
	}
	if string(s.Data["password"]) != "hunter2" || string(s.Data["user"]) != "bob" || s.StringData != nil {
		t.Errorf("data = %v, stringData = %v", s.Data, s.StringData)
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name   string
		secret corev1.Secret
		want   []string
	}{
		{"opaque", corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"a.b": nil}}, nil},
		{"bad key", corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"a/b": nil}}, []string{"data[a/b]"}},
		{"tls missing key", corev1.Secret{Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": nil}}, []string{"data[tls.key]"}},
		{"dockerconfigjson not json", corev1.Secret{Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{".dockerconfigjson": []byte("{")}}, []string{"data[.dockerconfigjson]"}},
		{"sa token without annotation", corev1.Secret{Type: corev1.SecretTypeServiceAccountToken}, []string{"metadata.annotations[kubernetes.io/service-account.name]"}},
		{"basic auth empty", corev1.Secret{Type: corev1.SecretTypeBasicAuth}, []string{"data[username]", "data[password]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range Resource().Validate(&tc.secret) {
				got = append(got, e.Field)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("error fields = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	yes := true
	old := &corev1.Secret{Type: corev1.SecretTypeOpaque, Immutable: &yes, Data: map[string][]byte{"a": []byte("1")}}
	changed := &corev1.Secret{Type: corev1.SecretTypeTLS, Immutable: &yes, Data: map[string][]byte{"a": []byte("2")}}
	errs := Resource().ValidateUpdate(changed, old)
	if len(errs) != 2 || errs[0].Field != "type" || errs[1].Field != "data" {
		t.Errorf("errors = %v", errs)
	}
	same := old.DeepCopy()
	same.Labels = map[string]string{"x": "y"}
	if errs := Resource().ValidateUpdate(same, old); len(errs) != 0 {
		t.Errorf("metadata-only update rejected: %v", errs)
	}
}

func TestRow(t *testing.T) {
	now := time.Now()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tls", CreationTimestamp: metav1.NewTime(now.Add(-90 * time.Second))},
		Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": nil, "tls.key": nil}}
	want := []interface{}{"tls", "kubernetes.io/tls", int64(2), "90s"}
	if got := Resource().Row(s, now); !reflect.DeepEqual(got, want) {
		t.Errorf("row = %v, want %v", got, want)
	}
	if got := Resource().SelectableFields(s)["type"]; got != "kubernetes.io/tls" {
		t.Errorf("type field = %q", got)
	}
}
