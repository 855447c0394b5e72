// Package flowschemas is the registry entry for flowcontrol.apiserver.k8s.io/v1
// flowschemas and their status subresource, with upstream's defaults,
// create preparation, validation (including that the mandatory schemas
// keep their bootstrap spec) and table. Classifying requests by the
// schemas (API priority and fairness) is not done.
package flowschemas

import (
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"orch/internal/apiserver/registry"
)

// defaultMatchingPrecedence is upstream's matchingPrecedence of a schema
// that gives none.
const defaultMatchingPrecedence int32 = 1000

// Resource returns the flowschemas entry. Validate runs on a create and on
// an update through the main resource alike, as upstream's; a write through
// /status only checks the status.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:         flowcontrolv1.SchemeGroupVersion,
		Resource:             "flowschemas",
		Kind:                 "FlowSchema",
		SingularName:         "flowschema",
		New:                  func() runtime.Object { return &flowcontrolv1.FlowSchema{} },
		NewList:              func() runtime.Object { return &flowcontrolv1.FlowSchemaList{} },
		HasStatus:            true,
		StatusMeta:           registry.StatusKeepsMeta,
		Default:              setDefaults,
		PrepareForCreate:     prepareForCreate,
		Validate:             validate,
		ValidateStatusUpdate: validateStatusUpdate,
		Columns:              columns,
		Row:                  row,
		RowsLess:             rowsLess,
	}
}

// setDefaults is upstream's: a schema without a matchingPrecedence gets 1000.
func setDefaults(obj runtime.Object) {
	fs := obj.(*flowcontrolv1.FlowSchema)
	if fs.Spec.MatchingPrecedence == 0 {
		fs.Spec.MatchingPrecedence = defaultMatchingPrecedence
	}
}

// prepareForCreate starts a schema with an empty status; the handlers set
// generation 1.
func prepareForCreate(obj runtime.Object) {
	obj.(*flowcontrolv1.FlowSchema).Status = flowcontrolv1.FlowSchemaStatus{}
}

var metaDocs = metav1.ObjectMeta{}.SwaggerDoc()

// columns are upstream's table for flow schemas.
var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: metaDocs["name"]},
	{Name: "PriorityLevel", Type: "string", Description: flowcontrolv1.PriorityLevelConfigurationReference{}.SwaggerDoc()["name"]},
	{Name: "MatchingPrecedence", Type: "string", Description: flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()["matchingPrecedence"]},
	{Name: "DistinguisherMethod", Type: "string", Description: flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()["distinguisherMethod"]},
	{Name: "Age", Type: "string", Description: metaDocs["creationTimestamp"]},
	{Name: "MissingPL", Type: "string", Description: "references a broken or non-existent PriorityLevelConfiguration"},
}

// row gives the priority level, the precedence, the distinguisher method
// ("<none>" without one) and the status of the Dangling condition ("?"
// until something sets it).
func row(obj runtime.Object, now time.Time) []interface{} {
	fs := obj.(*flowcontrolv1.FlowSchema)
	method := "<none>"
	if fs.Spec.DistinguisherMethod != nil {
		method = string(fs.Spec.DistinguisherMethod.Type)
	}
	missing := "?"
	for _, c := range fs.Status.Conditions {
		if c.Type == flowcontrolv1.FlowSchemaConditionDangling {
			missing = string(c.Status)
			break
		}
	}
	return []interface{}{fs.Name, fs.Spec.PriorityLevelConfiguration.Name, int64(fs.Spec.MatchingPrecedence),
		method, registry.Age(fs.CreationTimestamp, now), missing}
}

// rowsLess orders a listed table as upstream's printer does: by matching
// precedence, then by name.
func rowsLess(a, b runtime.Object) bool {
	x, y := a.(*flowcontrolv1.FlowSchema), b.(*flowcontrolv1.FlowSchema)
	if x.Spec.MatchingPrecedence != y.Spec.MatchingPrecedence {
		return x.Spec.MatchingPrecedence < y.Spec.MatchingPrecedence
	}
	return x.Name < y.Name
}
