package prioritylevelconfigurations

import (
	"encoding/json"
	"reflect"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

func toJSON(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

func limited(pl *flowcontrolv1.PriorityLevelConfiguration) *flowcontrolv1.LimitedPriorityLevelConfiguration {
	return pl.Spec.Limited
}

func TestCreate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*flowcontrolv1.PriorityLevelConfiguration)
		want   []want
	}{
		{"valid", func(*flowcontrolv1.PriorityLevelConfiguration) {}, nil},
		{"zero shares, all lent, borrowing without limit", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			limited(pl).NominalConcurrencyShares, limited(pl).LendablePercent = ptr.To[int32](0), ptr.To[int32](100)
		}, nil},
		{"rejecting", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			limited(pl).LimitResponse = flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}
		}, nil},
		{"negative numbers", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			limited(pl).NominalConcurrencyShares, limited(pl).LendablePercent, limited(pl).BorrowingLimitPercent = ptr.To[int32](-1), ptr.To[int32](101), ptr.To[int32](-1)
		}, []want{
			{"FieldValueInvalid spec.limited.nominalConcurrencyShares", "must be a non-negative integer"},
			{"FieldValueInvalid spec.limited.lendablePercent", "must be between 0 and 100, inclusive"},
			{"FieldValueInvalid spec.limited.borrowingLimitPercent", "if specified, must be a non-negative integer"},
		}},
		{"negative queuing", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			limited(pl).LimitResponse.Queuing = &flowcontrolv1.QueuingConfiguration{Queues: -1, HandSize: -1, QueueLengthLimit: -1}
		}, []want{
			{"FieldValueInvalid spec.limited.limitResponse.queuing.queueLengthLimit", "must be positive"},
			{"FieldValueInvalid spec.limited.limitResponse.queuing.queues", "must be positive"},
			{"FieldValueInvalid spec.limited.limitResponse.queuing.handSize", "must be positive"},
		}},
		{"too many queues", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			limited(pl).LimitResponse.Queuing = &flowcontrolv1.QueuingConfiguration{Queues: 10000001, HandSize: 1}
		}, []want{{"FieldValueInvalid spec.limited.limitResponse.queuing.queues", "must not be greater than 10000000"}}},
		{"hand larger than the queues", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			limited(pl).LimitResponse.Queuing = &flowcontrolv1.QueuingConfiguration{Queues: 4, HandSize: 5}
		}, []want{{"FieldValueInvalid spec.limited.limitResponse.queuing.handSize", "should not be greater than queues (4)"}}},
		{"not enough entropy", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			limited(pl).LimitResponse.Queuing = &flowcontrolv1.QueuingConfiguration{Queues: 128, HandSize: 10}
		}, []want{{"FieldValueInvalid spec.limited.limitResponse.queuing.handSize", "required entropy bits of deckSize 128 and handSize 10 should not be greater than 60"}}},
		{"limited without its member", func(pl *flowcontrolv1.PriorityLevelConfiguration) { pl.Spec.Limited = nil }, []want{
			{"FieldValueRequired spec.limited", ""},
		}},
		{"limited with exempt", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Exempt = &flowcontrolv1.ExemptPriorityLevelConfiguration{}
		}, []want{{"FieldValueForbidden spec.exempt", ""}}},
		{"handwritten first, then declarative", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Exempt = &flowcontrolv1.ExemptPriorityLevelConfiguration{}
			limited(pl).NominalConcurrencyShares = ptr.To[int32](-1)
		}, []want{
			{"FieldValueInvalid spec.limited.nominalConcurrencyShares", "must be a non-negative integer"},
			{"FieldValueForbidden spec.exempt", ""},
		}},
		{"exempt is exempt's", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Type = flowcontrolv1.PriorityLevelEnablementExempt
		}, []want{
			{"FieldValueInvalid spec.type", "must be 'Exempt' if and only if `name` is 'exempt'"},
			{"FieldValueForbidden spec.limited", ""},
		}},
		{"no type", func(pl *flowcontrolv1.PriorityLevelConfiguration) { pl.Spec.Type = "" }, []want{
			{"FieldValueForbidden spec.limited", ""},
			{"FieldValueRequired spec.type", ""},
		}},
		{"unknown type", func(pl *flowcontrolv1.PriorityLevelConfiguration) { pl.Spec.Type = "Sometimes" }, []want{
			{"FieldValueNotSupported spec.type", `supported values: "Exempt", "Limited"`},
			{"FieldValueForbidden spec.limited", ""},
		}},
		{"reject with queuing", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			limited(pl).LimitResponse.Type = flowcontrolv1.LimitResponseTypeReject
		}, []want{{"FieldValueForbidden spec.limited.limitResponse.queuing", ""}}},
		{"queue without queuing", func(pl *flowcontrolv1.PriorityLevelConfiguration) { limited(pl).LimitResponse.Queuing = nil }, []want{
			{"FieldValueRequired spec.limited.limitResponse.queuing", ""},
		}},
		{"no limit response type", func(pl *flowcontrolv1.PriorityLevelConfiguration) { limited(pl).LimitResponse.Type = "" }, []want{
			{"FieldValueForbidden spec.limited.limitResponse.queuing", ""},
			{"FieldValueRequired spec.limited.limitResponse.type", ""},
		}},
		{"unknown limit response type", func(pl *flowcontrolv1.PriorityLevelConfiguration) { limited(pl).LimitResponse.Type = "Drop" }, []want{
			{"FieldValueNotSupported spec.limited.limitResponse.type", `supported values: "Queue", "Reject"`},
			{"FieldValueForbidden spec.limited.limitResponse.queuing", ""},
		}},
		{"round-trip annotation", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Annotations = map[string]string{"flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares": ""}
		}, []want{{"FieldValueForbidden metadata.annotations", "annotation 'flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares' is forbidden"}}},
		{"exempt may change its exempt member", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Name, pl.Spec = "exempt", *bootstrap.MandatoryPriorityLevelConfigurationExempt.Spec.DeepCopy()
			pl.Spec.Exempt = &flowcontrolv1.ExemptPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To[int32](10), LendablePercent: ptr.To[int32](50)}
		}, nil},
		{"exempt without its member", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Name, pl.Spec = "exempt", flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementExempt}
		}, nil},
		{"exempt's numbers", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Name, pl.Spec = "exempt", *bootstrap.MandatoryPriorityLevelConfigurationExempt.Spec.DeepCopy()
			pl.Spec.Exempt = &flowcontrolv1.ExemptPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To[int32](-1), LendablePercent: ptr.To[int32](-1)}
		}, []want{
			{"FieldValueInvalid spec.exempt.nominalConcurrencyShares", "must be a non-negative integer"},
			{"FieldValueInvalid spec.exempt.lendablePercent", "must be between 0 and 100, inclusive"},
		}},
		{"exempt limited", func(pl *flowcontrolv1.PriorityLevelConfiguration) { pl.Name = "exempt" }, []want{
			{"FieldValueInvalid spec.type", "must be 'Exempt' if and only if `name` is 'exempt'"},
			{"FieldValueInvalid spec", "spec of 'exempt' except the 'spec.exempt' field must equal the fixed value"},
		}},
		{"catch-all keeps its bootstrap spec", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Name, pl.Spec = "catch-all", *bootstrap.MandatoryPriorityLevelConfigurationCatchAll.Spec.DeepCopy()
		}, nil},
		{"catch-all changed", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Name, pl.Spec = "catch-all", *bootstrap.MandatoryPriorityLevelConfigurationCatchAll.Spec.DeepCopy()
			limited(pl).NominalConcurrencyShares = nil // defaulted to 30, not 5
		}, []want{{"FieldValueInvalid spec", "spec of 'catch-all' must equal the fixed value"}}},
		{"a suggested level may change", func(pl *flowcontrolv1.PriorityLevelConfiguration) { pl.Name = "workload-low" }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := queuing()
			tt.modify(pl)
			registrytest.ExpectWant(t, registrytest.Create(Resource(), pl), tt.want...)
		})
	}
}

func TestUpdate(t *testing.T) {
	tests := []struct {
		name   string
		stored func(*flowcontrolv1.PriorityLevelConfiguration)
		modify func(*flowcontrolv1.PriorityLevelConfiguration)
		want   []want
	}{
		{"more queues", func(*flowcontrolv1.PriorityLevelConfiguration) {}, func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			limited(pl).LimitResponse.Queuing.Queues = 128
		}, nil},
		{"made exempt", func(*flowcontrolv1.PriorityLevelConfiguration) {}, func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Type = flowcontrolv1.PriorityLevelEnablementExempt
		}, []want{
			{"FieldValueInvalid spec.type", "must be 'Exempt' if and only if `name` is 'exempt'"},
			{"FieldValueForbidden spec.limited", ""},
		}},
		{"queuing dropped", func(*flowcontrolv1.PriorityLevelConfiguration) {}, func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			limited(pl).LimitResponse.Queuing = nil
		}, []want{{"FieldValueRequired spec.limited.limitResponse.queuing", ""}}},
		// The declarative rules do not look at an unchanged spec again; the
		// handwritten ones do, with their words.
		{"a stored level without its member, labelled", func(pl *flowcontrolv1.PriorityLevelConfiguration) { pl.Spec.Limited = nil },
			func(pl *flowcontrolv1.PriorityLevelConfiguration) { pl.Labels = map[string]string{"team": "a"} }, []want{
				{"FieldValueRequired spec.limited", "must not be empty when type is Limited"},
			}},
		{"a stored level without a limit response type, other numbers", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			limited(pl).LimitResponse = flowcontrolv1.LimitResponse{}
		}, func(pl *flowcontrolv1.PriorityLevelConfiguration) { limited(pl).LendablePercent = ptr.To[int32](5) }, []want{
			{"FieldValueRequired spec.limited.limitResponse.type", ""},
		}},
		{"a stored level without a limit response type, now rejecting with queuing", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			limited(pl).LimitResponse = flowcontrolv1.LimitResponse{}
		}, func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			limited(pl).LimitResponse = flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject, Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 1, HandSize: 1, QueueLengthLimit: 1}}
		}, []want{{"FieldValueForbidden spec.limited.limitResponse.queuing", ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := queuing()
			Resource().Default(old)
			tt.stored(old)
			pl := old.DeepCopy()
			tt.modify(pl)
			registrytest.ExpectWant(t, registrytest.Update(Resource(), pl, old), tt.want...)
		})
	}
}

// TestDeclarativeDetails: an error the declarative rules give has no
// detail, as upstream's; the handwritten one it replaces had one.
func TestDeclarativeDetails(t *testing.T) {
	pl := queuing()
	pl.Spec.Limited = nil
	errs := registrytest.Create(Resource(), pl)
	if got := messages(errs); !reflect.DeepEqual(got, []string{"spec.limited: Required value"}) {
		t.Errorf("create: %q", got)
	}

	old := pl.DeepCopy()
	pl.Labels = map[string]string{"team": "a"}
	errs = registrytest.Update(Resource(), pl, old)
	if got := messages(errs); !reflect.DeepEqual(got, []string{"spec.limited: Required value: must not be empty when type is Limited"}) {
		t.Errorf("unchanged spec: %q", got)
	}
}

func messages(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

func TestValidateStatusUpdate(t *testing.T) {
	tests := []struct {
		name       string
		conditions []flowcontrolv1.PriorityLevelConfigurationCondition
		want       []want
	}{
		{"a condition", []flowcontrolv1.PriorityLevelConfigurationCondition{{Type: "Concurrency", Status: flowcontrolv1.ConditionTrue}}, nil},
		{"without a type, twice", []flowcontrolv1.PriorityLevelConfigurationCondition{{Type: "A"}, {Type: "A"}, {}}, []want{
			{"FieldValueDuplicate status.conditions[1].type", ""},
			{"FieldValueRequired status.conditions[2].type", ""},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := queuing()
			Resource().Default(old)
			pl := old.DeepCopy()
			pl.Status.Conditions = tt.conditions
			registrytest.ExpectWant(t, Resource().ValidateStatusUpdate(pl, old), tt.want...)
		})
	}

	// A stored level that today's rules reject still takes status writes.
	old := queuing()
	old.Spec.Type = ""
	pl := old.DeepCopy()
	pl.Status.Conditions = []flowcontrolv1.PriorityLevelConfigurationCondition{{Type: "Concurrency", Status: flowcontrolv1.ConditionTrue}}
	registrytest.ExpectWant(t, Resource().ValidateStatusUpdate(pl, old))
}
