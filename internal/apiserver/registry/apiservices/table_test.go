package apiservices

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"orch/internal/apiserver/registry/registrytest"
)

func TestRow(t *testing.T) {
	r := Resource()
	created := metav1.NewTime(time.Date(2025, 5, 3, 16, 0, 0, 0, time.UTC))
	available := func(status apiregistrationv1.ConditionStatus, reason string) []apiregistrationv1.APIServiceCondition {
		return []apiregistrationv1.APIServiceCondition{
			{Type: "Other", Status: apiregistrationv1.ConditionFalse, Reason: "NotThisOne"},
			{Type: apiregistrationv1.Available, Status: status, Reason: reason},
		}
	}
	tests := []struct {
		name       string
		base       func() *apiregistrationv1.APIService
		conditions []apiregistrationv1.APIServiceCondition
		want       []interface{}
	}{
		{"local, available", local, available(apiregistrationv1.ConditionTrue, "Local"), []interface{}{"v1.example.com", "Local", "True", "2d"}},
		{"service, no condition yet", remote, nil, []interface{}{"v1beta1.example.com", "kube-system/example-api", "Unknown", "2d"}},
		{"service, unavailable with a reason", remote, available(apiregistrationv1.ConditionFalse, "MissingEndpoints"),
			[]interface{}{"v1beta1.example.com", "kube-system/example-api", "False (MissingEndpoints)", "2d"}},
		{"service, unavailable without a reason", remote, available(apiregistrationv1.ConditionFalse, ""),
			[]interface{}{"v1beta1.example.com", "kube-system/example-api", "False", "2d"}},
		{"service, unknown with a reason", remote, available(apiregistrationv1.ConditionUnknown, "ServiceNotFound"),
			[]interface{}{"v1beta1.example.com", "kube-system/example-api", "Unknown (ServiceNotFound)", "2d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.base()
			s.CreationTimestamp = created
			s.Status.Conditions = tt.conditions
			row := r.Row(s, created.Add(48*time.Hour))
			registrytest.CheckTable(t, r, row)
			if !reflect.DeepEqual(row, tt.want) {
				t.Errorf("row = %#v, want %#v", row, tt.want)
			}
		})
	}
	var headers []string
	for _, c := range r.Columns {
		headers = append(headers, c.Name)
	}
	if !reflect.DeepEqual(headers, []string{"Name", "Service", "Available", "Age"}) {
		t.Errorf("kubectl get apiservices shows %v", headers)
	}
}
