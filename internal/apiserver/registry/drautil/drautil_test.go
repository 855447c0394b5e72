package drautil

import (
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry/registrytest"
)

type want = registrytest.Want

var path = field.NewPath("x")

func TestNames(t *testing.T) {
	tests := []struct {
		name string
		errs field.ErrorList
		want []want
	}{
		{"driver", ValidateDriverName("dra.example.com", path), nil},
		{"driver in upper case", ValidateDriverName("DRA.example.com", path), nil},
		{"no driver", ValidateDriverName("", path), []want{{"FieldValueRequired x", ""}}},
		{"driver too long", ValidateDriverName(strings.Repeat("a", 64), path), []want{{"FieldValueTooLong x", "63"}}},
		{"driver with a slash", ValidateDriverName("a/b", path), []want{{"FieldValueInvalid x", "RFC 1123 subdomain"}}},
		{"pool", ValidatePoolName("node-1/gpus", path), nil},
		{"no pool", ValidatePoolName("", path), []want{{"FieldValueRequired x", ""}}},
		{"pool segment", ValidatePoolName("a//b", path), []want{{"FieldValueInvalid x", "RFC 1123 subdomain"}}},
		{"pool too long", ValidatePoolName(strings.Repeat("a", 254), path), []want{{"FieldValueTooLong x", "253"}, {"FieldValueInvalid x", "no more than 253"}}},
		{"qualified name", ValidateQualifiedName("dra.example.com/model_2", path), nil},
		{"bare qualified name", ValidateQualifiedName("model", path), nil},
		{"qualified name, no C identifier", ValidateQualifiedName("dra.example.com/model-2", path), []want{{"FieldValueInvalid x", "C identifier"}}},
		{"qualified name, empty parts", ValidateQualifiedName("/", path), []want{
			{"FieldValueInvalid x", "the domain must not be empty"}, {"FieldValueInvalid x", "the name must not be empty"},
		}},
		{"qualified name too long", ValidateQualifiedName(resourcev1.QualifiedName(strings.Repeat("a", 33)), path), []want{{"FieldValueTooLong x", "32"}}},
		{"fully qualified name", ValidateFullyQualifiedName("dra.example.com/numa", path), nil},
		{"fully qualified name without a domain", ValidateFullyQualifiedName("numa", path), []want{{"FieldValueInvalid x", "a fully qualified name must be a domain"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { registrytest.ExpectWant(t, tt.errs, tt.want...) })
	}
}

func TestValidateSet(t *testing.T) {
	names := func(n ...string) []string { return n }
	registrytest.ExpectWant(t, ValidateSet(names("a", "B", "a"), 3, path, Self, ValidateLabel),
		want{"FieldValueInvalid x[1]", "lowercase"}, want{"FieldValueDuplicate x[2]", ""})
	// Too many: one error, the items are not looked at.
	registrytest.ExpectWant(t, ValidateSet(names("a", "B", "a"), 2, path, Self, ValidateLabel), want{"FieldValueTooMany x", "must have at most 2 items"})
	registrytest.ExpectWant(t, ValidateList(names("A", "B"), -1, path, nil))
}

func TestSelectors(t *testing.T) {
	sel := func(expr string) resourcev1.DeviceSelector {
		return resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: expr}}
	}
	tests := []struct {
		name      string
		selectors []resourcev1.DeviceSelector
		stored    bool
		want      []want
	}{
		{"e2e", []resourcev1.DeviceSelector{sel("false"), sel("1 == 0")}, false, nil},
		{"attributes and capacity", []resourcev1.DeviceSelector{
			sel(`device.driver == "dra.example.com" && device.attributes["dra.example.com"].model == "a100"`),
			sel(`device.capacity["dra.example.com"].memory.compareTo(quantity("40Gi")) >= 0`),
		}, false, nil},
		{"no cel", []resourcev1.DeviceSelector{{}}, false, []want{{"FieldValueRequired x[0].cel", ""}}},
		{"syntax", []resourcev1.DeviceSelector{sel("1 ==")}, false, []want{{"FieldValueInvalid x[0].cel.expression", "compilation failed"}}},
		{"not a bool", []resourcev1.DeviceSelector{sel(`device.driver`)}, false, []want{{"FieldValueInvalid x[0].cel.expression", "must evaluate to bool"}}},
		{"unknown variable", []resourcev1.DeviceSelector{sel(`pod.name == "x"`)}, false, []want{{"FieldValueInvalid x[0].cel.expression", "undeclared reference to 'pod'"}}},
		{"too long", []resourcev1.DeviceSelector{sel(strings.Repeat(" ", 10*1024+1))}, false, []want{{"FieldValueTooLong x[0].cel.expression", "10240"}}},
		{"stored is not compiled", []resourcev1.DeviceSelector{sel("1 ==")}, true, nil},
		{"stored still needs cel", []resourcev1.DeviceSelector{{}}, true, []want{{"FieldValueRequired x[0].cel", ""}}},
		{"33 selectors", make([]resourcev1.DeviceSelector, 33), false, []want{{"FieldValueTooMany x", "at most 32"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectWant(t, ValidateSelectors(tt.selectors, tt.stored, path), tt.want...)
		})
	}
}

func TestConfiguration(t *testing.T) {
	opaque := func(driver, params string) resourcev1.DeviceConfiguration {
		return resourcev1.DeviceConfiguration{Opaque: &resourcev1.OpaqueDeviceConfiguration{Driver: driver, Parameters: runtime.RawExtension{Raw: []byte(params)}}}
	}
	big := `{"a":"` + strings.Repeat("x", 10*1024) + `"}`
	tests := []struct {
		name   string
		config resourcev1.DeviceConfiguration
		stored bool
		want   []want
	}{
		{"object", opaque("dra.example.com", `{"sharing":"timeSlicing"}`), false, nil},
		{"no opaque", resourcev1.DeviceConfiguration{}, false, []want{{"FieldValueRequired x.opaque", ""}}},
		{"no driver, no parameters", opaque("", ""), false, []want{{"FieldValueRequired x.opaque.driver", ""}, {"FieldValueRequired x.opaque.parameters", ""}}},
		{"null", opaque("d.io", "null"), false, []want{{"FieldValueRequired x.opaque.parameters", ""}}},
		{"not an object", opaque("d.io", "[1]"), false, []want{{"FieldValueInvalid x.opaque.parameters", "must be a valid JSON object"}}},
		{"not JSON", opaque("d.io", "{"), false, []want{{"FieldValueInvalid x.opaque.parameters", "error parsing data as JSON"}}},
		{"too large", opaque("d.io", big), false, []want{{"FieldValueTooLong x.opaque.parameters", "10240"}}},
		{"too large, stored", opaque("d.io", big), true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectWant(t, ValidateConfiguration(tt.config, tt.stored, path), tt.want...)
		})
	}
}

func TestTaintsAndTolerations(t *testing.T) {
	taint := resourcev1.DeviceTaint{Key: "example.com/unhealthy", Value: "ecc", Effect: resourcev1.DeviceTaintEffectNoExecute}
	registrytest.ExpectWant(t, ValidateTaint(taint, nil, path))
	bad := resourcev1.DeviceTaint{Key: "", Value: "a b", Effect: "Sometimes"}
	registrytest.ExpectWant(t, ValidateTaint(bad, nil, path),
		want{"FieldValueInvalid x.key", "name part must be non-empty"},
		want{"FieldValueInvalid x.key", "name part must consist of"},
		want{"FieldValueInvalid x.value", "a valid label must be"},
		want{"FieldValueNotSupported x.effect", `supported values: "NoExecute", "NoSchedule", "None"`})
	registrytest.ExpectWant(t, ValidateTaint(resourcev1.DeviceTaint{Key: "k"}, nil, path), want{"FieldValueRequired x.effect", ""})
	// An effect the stored taint had is not checked again.
	registrytest.ExpectWant(t, ValidateTaint(resourcev1.DeviceTaint{Key: "k", Effect: "Old"}, &resourcev1.DeviceTaint{Effect: "Old"}, path))

	tolerations := []resourcev1.DeviceToleration{
		{Key: "example.com/unhealthy", Operator: resourcev1.DeviceTolerationOpExists, Effect: resourcev1.DeviceTaintEffectNoExecute},
		{Operator: resourcev1.DeviceTolerationOpExists},
		{Key: "k", Value: "v"},
		{Key: "k", Operator: resourcev1.DeviceTolerationOpExists, Value: "v"},
		{Key: "k", Operator: "In", Effect: "Never"},
	}
	DefaultTolerations(tolerations)
	if tolerations[2].Operator != resourcev1.DeviceTolerationOpEqual || tolerations[1].Operator != resourcev1.DeviceTolerationOpExists {
		t.Errorf("defaulted operators: %+v", tolerations)
	}
	registrytest.ExpectWant(t, ValidateTolerations(tolerations, path),
		want{"FieldValueInvalid x[3].value", "must be empty for operator `Exists`"},
		want{"FieldValueNotSupported x[4].operator", `supported values: "Equal", "Exists"`},
		want{"FieldValueNotSupported x[4].effect", ""})
	registrytest.ExpectWant(t, ValidateTolerations([]resourcev1.DeviceToleration{{}}, path), want{"FieldValueRequired x[0].operator", ""})

	d := resourcev1.DeviceTaint{}
	DefaultTaint(&d)
	if d.TimeAdded == nil || d.TimeAdded.Nanosecond() != 0 {
		t.Errorf("timeAdded = %v, want now to the second", d.TimeAdded)
	}
}

func TestBindingConditions(t *testing.T) {
	tests := []struct {
		name                string
		conditions, failure []string
		want                []want
	}{
		{"none", nil, nil, nil},
		{"both", []string{"example.com/attached"}, []string{"example.com/failed"}, nil},
		{"repeated and overlapping", []string{"a", "a"}, []string{"b", "a"}, []want{
			{"FieldValueDuplicate x.bindingConditions[1]", ""},
			{"FieldValueInvalid x.bindingFailureConditions[1]", "must not overlap"},
		}},
		{"only conditions", []string{"a"}, nil, []want{{"FieldValueInvalid x.bindingFailureConditions", "are required to use bindingConditions"}}},
		{"only failures", nil, []string{"a"}, []want{{"FieldValueInvalid x.bindingConditions", "are required to use bindingFailureConditions"}}},
		{"too many, bad name", []string{"a", "b", "c", "d", "e"}, []string{"-"}, []want{
			{"FieldValueTooMany x.bindingConditions", "at most 4"},
			{"FieldValueInvalid x.bindingFailureConditions[0]", "name part must consist"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectWant(t, ValidateBindingConditions(tt.conditions, tt.failure, path), tt.want...)
		})
	}
}
