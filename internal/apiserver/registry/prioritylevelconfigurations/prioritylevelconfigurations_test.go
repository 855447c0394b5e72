package prioritylevelconfigurations

import (
	"reflect"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/registrytest"
)

type want = registrytest.Want

// queuing is a valid limited level that queues, written as a user would
// (nothing defaulted).
func queuing() *flowcontrolv1.PriorityLevelConfiguration {
	return &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{}},
			},
		},
	}
}

func TestResource(t *testing.T) {
	r := Resource()
	if r.GroupVersion.String() != "flowcontrol.apiserver.k8s.io/v1" || r.Resource != "prioritylevelconfigurations" || r.Kind != "PriorityLevelConfiguration" ||
		r.SingularName != "prioritylevelconfiguration" || r.Namespaced || !r.HasStatus || r.NameValidation != registry.NameSubdomain {
		t.Errorf("names: %+v", r)
	}
	if r.ShortNames != nil || r.Categories != nil {
		t.Errorf("short names %v, categories %v; upstream has none", r.ShortNames, r.Categories)
	}
	if _, ok := r.New().(*flowcontrolv1.PriorityLevelConfiguration); !ok {
		t.Errorf("New() = %T", r.New())
	}
	if _, ok := r.NewList().(*flowcontrolv1.PriorityLevelConfigurationList); !ok {
		t.Errorf("NewList() = %T", r.NewList())
	}
}

func TestDefault(t *testing.T) {
	tests := []struct {
		name string
		spec flowcontrolv1.PriorityLevelConfigurationSpec
		want flowcontrolv1.PriorityLevelConfigurationSpec
	}{
		{"limited, queuing", queuing().Spec, flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr.To[int32](30), LendablePercent: ptr.To[int32](0),
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
					Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 64, HandSize: 8, QueueLengthLimit: 50}},
			},
		}},
		{"limited, values kept, zero shares stay zero", flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr.To[int32](0), LendablePercent: ptr.To[int32](10), BorrowingLimitPercent: ptr.To[int32](200),
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
					Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 7, HandSize: 3, QueueLengthLimit: 9}},
			},
		}, flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr.To[int32](0), LendablePercent: ptr.To[int32](10), BorrowingLimitPercent: ptr.To[int32](200),
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
					Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 7, HandSize: 3, QueueLengthLimit: 9}},
			},
		}},
		{"limited, rejecting", flowcontrolv1.PriorityLevelConfigurationSpec{
			Type:    flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}},
		}, flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To[int32](30), LendablePercent: ptr.To[int32](0),
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}},
		}},
		{"exempt", flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementExempt, Exempt: &flowcontrolv1.ExemptPriorityLevelConfiguration{},
		}, flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementExempt, Exempt: &flowcontrolv1.ExemptPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr.To[int32](0), LendablePercent: ptr.To[int32](0)},
		}},
		{"exempt without its member gets none", flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementExempt},
			flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementExempt}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := &flowcontrolv1.PriorityLevelConfiguration{Spec: tt.spec}
			Resource().Default(pl)
			if !reflect.DeepEqual(pl.Spec, tt.want) {
				t.Errorf("spec = %s, want %s", toJSON(pl.Spec), toJSON(tt.want))
			}
		})
	}
}

func TestPrepareForCreate(t *testing.T) {
	pl := queuing()
	pl.Status.Conditions = []flowcontrolv1.PriorityLevelConfigurationCondition{{Type: "Concurrency", Status: flowcontrolv1.ConditionTrue}}
	registrytest.ExpectWant(t, registrytest.Create(Resource(), pl))
	if !reflect.DeepEqual(pl.Status, flowcontrolv1.PriorityLevelConfigurationStatus{}) {
		t.Errorf("status = %+v, want empty", pl.Status)
	}
}

// TestBootstrap: every level upstream's apiserver creates is valid here,
// defaulted or not, and defaulting does not change it.
func TestBootstrap(t *testing.T) {
	for _, pl := range append(append([]*flowcontrolv1.PriorityLevelConfiguration{}, bootstrap.MandatoryPriorityLevelConfigurations...), bootstrap.SuggestedPriorityLevelConfigurations...) {
		t.Run(pl.Name, func(t *testing.T) {
			got := pl.DeepCopy()
			registrytest.ExpectWant(t, registrytest.Create(Resource(), got))
			if !reflect.DeepEqual(got.Spec, pl.Spec) {
				t.Errorf("defaulted spec %s, bootstrap %s", toJSON(got.Spec), toJSON(pl.Spec))
			}
		})
	}
}

func TestRow(t *testing.T) {
	r := Resource()
	created := metav1.NewTime(time.Date(2025, 5, 3, 16, 0, 0, 0, time.UTC))
	tests := []struct {
		level *flowcontrolv1.PriorityLevelConfiguration
		want  []interface{}
	}{
		{queuing(), []interface{}{"team-a", "Limited", int64(30), int64(64), int64(8), int64(50), "2d"}},
		{bootstrap.MandatoryPriorityLevelConfigurationCatchAll.DeepCopy(), []interface{}{"catch-all", "Limited", int64(5), "<none>", "<none>", "<none>", "2d"}},
		{bootstrap.MandatoryPriorityLevelConfigurationExempt.DeepCopy(), []interface{}{"exempt", "Exempt", "<none>", "<none>", "<none>", "<none>", "2d"}},
	}
	for _, tt := range tests {
		t.Run(tt.level.Name, func(t *testing.T) {
			r.Default(tt.level)
			tt.level.CreationTimestamp = created
			row := r.Row(tt.level, created.Add(48*time.Hour))
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
	if !reflect.DeepEqual(headers, []string{"Name", "Type", "NominalConcurrencyShares", "Queues", "HandSize", "QueueLengthLimit", "Age"}) {
		t.Errorf("kubectl get prioritylevelconfigurations shows %v", headers)
	}
}
