// Package priorityclasses is the registry entry for scheduling.k8s.io/v1
// priorityclasses.
package priorityclasses

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
)

const (
	// highestUserDefinablePriority is the largest value a priority class
	// outside the system- prefix may have.
	highestUserDefinablePriority = 1000000000
	systemPrefix                 = "system-"
)

// systemClasses are the built-in classes the system- prefix is reserved for.
var systemClasses = map[string]int32{
	"system-node-critical":    2000001000,
	"system-cluster-critical": 2000000000,
}

// Resource returns the priorityclasses entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:   schedulingv1.SchemeGroupVersion,
		Resource:       "priorityclasses",
		Kind:           "PriorityClass",
		SingularName:   "priorityclass",
		ShortNames:     []string{"pc"},
		New:            func() runtime.Object { return &schedulingv1.PriorityClass{} },
		NewList:        func() runtime.Object { return &schedulingv1.PriorityClassList{} },
		Default:        setDefaults,
		Validate:       validate,
		ValidateUpdate: validateUpdate,
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "Value", Type: "integer", Description: schedulingv1.PriorityClass{}.SwaggerDoc()["value"]},
			{Name: "Global-Default", Type: "boolean", Description: schedulingv1.PriorityClass{}.SwaggerDoc()["globalDefault"]},
			{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
			{Name: "PreemptionPolicy", Type: "string", Description: schedulingv1.PriorityClass{}.SwaggerDoc()["preemptionPolicy"]},
		},
		Row: func(obj runtime.Object, now time.Time) []interface{} {
			pc := obj.(*schedulingv1.PriorityClass)
			policy := ""
			if pc.PreemptionPolicy != nil {
				policy = string(*pc.PreemptionPolicy)
			}
			return []interface{}{pc.Name, int64(pc.Value), pc.GlobalDefault, registry.Age(pc.CreationTimestamp, now), policy}
		},
	}
}

func setDefaults(obj runtime.Object) {
	pc := obj.(*schedulingv1.PriorityClass)
	if pc.PreemptionPolicy == nil {
		policy := corev1.PreemptLowerPriority
		pc.PreemptionPolicy = &policy
	}
}

func validate(obj runtime.Object) field.ErrorList {
	pc := obj.(*schedulingv1.PriorityClass)
	var errs field.ErrorList
	if strings.HasPrefix(pc.Name, systemPrefix) {
		if err := checkSystemClass(pc); err != "" {
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "name"),
				"priority class names with '"+systemPrefix+"' prefix are reserved for system use only. error: "+err))
		}
	} else if pc.Value > highestUserDefinablePriority {
		errs = append(errs, field.Forbidden(field.NewPath("value"), fmt.Sprintf("maximum allowed value of a user defined priority is %v", highestUserDefinablePriority)))
	}
	if pc.PreemptionPolicy != nil {
		p := field.NewPath("preemptionPolicy")
		switch *pc.PreemptionPolicy {
		case corev1.PreemptLowerPriority, corev1.PreemptNever:
		case "":
			errs = append(errs, field.Required(p, ""))
		default:
			errs = append(errs, field.NotSupported(p, *pc.PreemptionPolicy, []corev1.PreemptionPolicy{corev1.PreemptLowerPriority, corev1.PreemptNever}))
		}
	}
	return errs
}

// checkSystemClass says what is wrong with a class using the system- prefix,
// or "" when it is one of the built-in classes as defined.
func checkSystemClass(pc *schedulingv1.PriorityClass) string {
	value, ok := systemClasses[pc.Name]
	switch {
	case !ok:
		return fmt.Sprintf("%v is not a known system priority class", pc.Name)
	case value != pc.Value:
		return fmt.Sprintf("value of %v PriorityClass must be %v", pc.Name, value)
	case pc.GlobalDefault:
		return fmt.Sprintf("globalDefault of %v PriorityClass must be false", pc.Name)
	}
	return ""
}

func validateUpdate(obj, old runtime.Object) field.ErrorList {
	pc, oldPC := obj.(*schedulingv1.PriorityClass), old.(*schedulingv1.PriorityClass)
	var errs field.ErrorList
	if pc.Value != oldPC.Value {
		errs = append(errs, field.Forbidden(field.NewPath("value"), "may not be changed in an update."))
	}
	return append(errs, apivalidation.ValidateImmutableField(pc.PreemptionPolicy, oldPC.PreemptionPolicy, field.NewPath("preemptionPolicy"))...)
}
