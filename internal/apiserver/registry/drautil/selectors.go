package drautil

import (
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	dracel "k8s.io/dynamic-resource-allocation/cel"
)

// celFeatures are the DRA features upstream's CEL environment for device
// selectors has by default: consumable capacity (beta), no list-type
// attributes (alpha).
var celFeatures = dracel.Features{EnableConsumableCapacity: true}

// ValidateSelectors checks at most 32 device selectors, each with a CEL
// expression that compiles, in upstream's environment for new
// expressions, to a bool within the cost limit. Expressions the server
// stored before (stored) are not compiled again.
func ValidateSelectors(selectors []resourcev1.DeviceSelector, stored bool, path *field.Path) field.ErrorList {
	return ValidateList(selectors, resourcev1.DeviceSelectorsMaxSize, path, func(s resourcev1.DeviceSelector, p *field.Path) field.ErrorList {
		if s.CEL == nil {
			return field.ErrorList{field.Required(p.Child("cel"), "")}
		}
		if stored {
			return nil
		}
		return validateExpression(s.CEL.Expression, p.Child("cel", "expression"))
	})
}

func validateExpression(expression string, path *field.Path) field.ErrorList {
	if len(expression) > resourcev1.CELSelectorExpressionMaxLength {
		return field.ErrorList{field.TooLong(path, "", resourcev1.CELSelectorExpressionMaxLength)}
	}
	envType := environment.NewExpressions
	result := dracel.GetCompiler(celFeatures).CompileCELExpression(expression, dracel.Options{EnvType: &envType})
	if result.Error != nil {
		return field.ErrorList{celError(path, expression, result.Error)}
	}
	if result.MaxCost > resourcev1.CELSelectorExpressionMaxCost {
		return field.ErrorList{field.Forbidden(path, "too complex, exceeds cost limit")}
	}
	return nil
}

// celError turns a compilation error into the field error upstream gives.
func celError(path *field.Path, expression string, err *apiservercel.Error) *field.Error {
	switch err.Type {
	case apiservercel.ErrorTypeRequired:
		return field.Required(path, err.Detail)
	case apiservercel.ErrorTypeInvalid:
		return field.Invalid(path, expression, err.Detail)
	case apiservercel.ErrorTypeInternal:
		return field.InternalError(path, err)
	}
	return field.InternalError(path, fmt.Errorf("unsupported error type: %w", err))
}
