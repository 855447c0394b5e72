package flowschemas

import (
	"reflect"
	"sort"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"orch/internal/apiserver/registry/registrytest"
)

func TestRow(t *testing.T) {
	r := Resource()
	created := metav1.NewTime(time.Date(2025, 5, 3, 16, 0, 0, 0, time.UTC))
	tests := []struct {
		name       string
		modify     func(*flowcontrolv1.FlowSchema)
		conditions []flowcontrolv1.FlowSchemaCondition
		want       []interface{}
	}{
		{"no status yet", func(*flowcontrolv1.FlowSchema) {}, nil, []interface{}{"team-a", "workload-low", int64(1000), "ByNamespace", "2d", "?"}},
		{"without a distinguisher, dangling", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.DistinguisherMethod = nil }, []flowcontrolv1.FlowSchemaCondition{
			{Type: "Other", Status: flowcontrolv1.ConditionFalse},
			{Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionTrue, Reason: "NotFound"},
		}, []interface{}{"team-a", "workload-low", int64(1000), "<none>", "2d", "True"}},
		{"found", func(*flowcontrolv1.FlowSchema) {}, []flowcontrolv1.FlowSchemaCondition{
			{Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionFalse, Reason: "Found"},
		}, []interface{}{"team-a", "workload-low", int64(1000), "ByNamespace", "2d", "False"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := schema()
			r.Default(fs)
			tt.modify(fs)
			fs.CreationTimestamp = created
			fs.Status.Conditions = tt.conditions
			row := r.Row(fs, created.Add(48*time.Hour))
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
	if !reflect.DeepEqual(headers, []string{"Name", "PriorityLevel", "MatchingPrecedence", "DistinguisherMethod", "Age", "MissingPL"}) {
		t.Errorf("kubectl get flowschemas shows %v", headers)
	}
}

func TestRowsLess(t *testing.T) {
	named := func(name string, precedence int32) runtime.Object {
		return &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: flowcontrolv1.FlowSchemaSpec{MatchingPrecedence: precedence}}
	}
	items := []runtime.Object{named("global-default", 9900), named("kube-scheduler", 800), named("exempt", 1), named("kube-controller-manager", 800), named("catch-all", 10000)}
	sort.SliceStable(items, func(i, j int) bool { return Resource().RowsLess(items[i], items[j]) })
	var got []string
	for _, o := range items {
		got = append(got, o.(*flowcontrolv1.FlowSchema).Name)
	}
	if want := []string{"exempt", "kube-controller-manager", "kube-scheduler", "global-default", "catch-all"}; !reflect.DeepEqual(got, want) {
		t.Errorf("rows in order %v, want %v", got, want)
	}
}
