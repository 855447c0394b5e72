package drautil

import (
	"encoding/json"
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateConfiguration checks a device configuration: opaque is
// required, with a driver name and parameters that are a JSON object of at
// most 10 KiB (the size of stored parameters is not checked again).
func ValidateConfiguration(c resourcev1.DeviceConfiguration, stored bool, path *field.Path) field.ErrorList {
	if c.Opaque == nil {
		return field.ErrorList{field.Required(path.Child("opaque"), "")}
	}
	p := path.Child("opaque")
	errs := ValidateDriverName(c.Opaque.Driver, p.Child("driver"))
	return append(errs, ValidateRawObject(c.Opaque.Parameters, stored, resourcev1.OpaqueParametersMaxLength, p.Child("parameters"))...)
}

// ValidateRawObject checks that raw holds a JSON object of at most max
// bytes (unless stored).
func ValidateRawObject(raw runtime.RawExtension, stored bool, max int, path *field.Path) field.ErrorList {
	if len(raw.Raw) == 0 {
		return field.ErrorList{field.Required(path, "")}
	}
	if !stored && len(raw.Raw) > max {
		return field.ErrorList{field.TooLong(path, "", max)}
	}
	var v any
	if err := json.Unmarshal(raw.Raw, &v); err != nil {
		return field.ErrorList{field.Invalid(path, "<value omitted>", fmt.Sprintf("error parsing data as JSON: %v", err))}
	}
	if v == nil {
		return field.ErrorList{field.Required(path, "")}
	}
	if _, ok := v.(map[string]any); !ok {
		return field.ErrorList{field.Invalid(path, "<value omitted>", "must be a valid JSON object")}
	}
	return nil
}
