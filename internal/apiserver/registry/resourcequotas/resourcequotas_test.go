package resourcequotas

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		spec corev1.ResourceQuotaSpec
		want []string
	}{
		{"valid", corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			"pods": resource.MustParse("10"), "requests.cpu": resource.MustParse("2"), "count/deployments.apps": resource.MustParse("5"),
		}}, nil},
		{"unknown name", corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"gpus": resource.MustParse("1")}}, []string{"spec.hard[gpus]"}},
		{"negative", corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"pods": resource.MustParse("-1")}}, []string{"spec.hard[pods]"}},
		{"bad scope", corev1.ResourceQuotaSpec{Scopes: []corev1.ResourceQuotaScope{"Sometimes"}}, []string{"spec.scopes"}},
		{"conflicting scopes", corev1.ResourceQuotaSpec{Scopes: []corev1.ResourceQuotaScope{"Terminating", "NotTerminating"}}, []string{"spec.scopes"}},
		{"best effort with cpu", corev1.ResourceQuotaSpec{Scopes: []corev1.ResourceQuotaScope{"BestEffort"},
			Hard: corev1.ResourceList{"cpu": resource.MustParse("1")}}, []string{"spec.hard[cpu]"}},
	}
	for _, tc := range cases {
		var got []string
		for _, e := range Resource().Validate(&corev1.ResourceQuota{Spec: tc.spec}) {
			got = append(got, e.Field)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: error fields = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRow(t *testing.T) {
	now := time.Now()
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "compute", CreationTimestamp: metav1.NewTime(now.Add(-20 * time.Second))},
		Status: corev1.ResourceQuotaStatus{
			Hard: corev1.ResourceList{"requests.cpu": resource.MustParse("1"), "limits.memory": resource.MustParse("2Gi"), "pods": resource.MustParse("10")},
			Used: corev1.ResourceList{"requests.cpu": resource.MustParse("500m"), "pods": resource.MustParse("3")},
		},
	}
	want := []interface{}{"compute", "pods: 3/10, requests.cpu: 500m/1", "limits.memory: 0/2Gi", "20s"}
	if got := Resource().Row(q, now); !reflect.DeepEqual(got, want) {
		t.Errorf("row = %v\nwant  %v", got, want)
	}
}

func TestPrepareForCreateClearsStatus(t *testing.T) {
	q := &corev1.ResourceQuota{Status: corev1.ResourceQuotaStatus{Used: corev1.ResourceList{"pods": resource.MustParse("1")}}}
	Resource().PrepareForCreate(q)
	if q.Status.Used != nil {
		t.Errorf("status kept: %v", q.Status)
	}
}
