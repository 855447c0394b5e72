// Package prioritylevelconfigurations is the registry entry for
// flowcontrol.apiserver.k8s.io/v1 prioritylevelconfigurations and their
// status subresource, with upstream's defaults, create preparation,
// validation (handwritten and declarative, including that the mandatory
// levels keep their bootstrap spec) and table. Limiting requests by the
// levels (API priority and fairness) is not done.
package prioritylevelconfigurations

import (
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry"
)

// Upstream's defaults for a v1 priority level.
const (
	defaultNominalConcurrencyShares int32 = 30
	defaultQueues                   int32 = 64
	defaultHandSize                 int32 = 8
	defaultQueueLengthLimit         int32 = 50
)

// Resource returns the prioritylevelconfigurations entry. Validate is nil:
// a create and an update run the same checks, but the declarative ones
// look at what an update changed; a write through /status only checks the
// status.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:         flowcontrolv1.SchemeGroupVersion,
		Resource:             "prioritylevelconfigurations",
		Kind:                 "PriorityLevelConfiguration",
		SingularName:         "prioritylevelconfiguration",
		New:                  func() runtime.Object { return &flowcontrolv1.PriorityLevelConfiguration{} },
		NewList:              func() runtime.Object { return &flowcontrolv1.PriorityLevelConfigurationList{} },
		HasStatus:            true,
		StatusMeta:           registry.StatusKeepsMeta,
		Default:              setDefaults,
		PrepareForCreate:     prepareForCreate,
		ValidateCreate:       validateCreate,
		ValidateUpdate:       validateUpdate,
		ValidateStatusUpdate: validateStatusUpdate,
		Columns:              columns,
		Row:                  row,
	}
}

// setDefaults is upstream's for v1. A limited level without
// nominalConcurrencyShares gets 30 (an explicit 0 stays: v1 allows a level
// with no seats of its own), lendablePercent 0, and queuing 64 queues, a
// hand of 8 and 50 requests a queue; an exempt level's unset numbers are 0.
func setDefaults(obj runtime.Object) {
	spec := &obj.(*flowcontrolv1.PriorityLevelConfiguration).Spec
	if l := spec.Limited; l != nil {
		if l.NominalConcurrencyShares == nil {
			l.NominalConcurrencyShares = ptr.To(defaultNominalConcurrencyShares)
		}
		if l.LendablePercent == nil {
			l.LendablePercent = ptr.To[int32](0)
		}
		if q := l.LimitResponse.Queuing; q != nil {
			defaultZero(&q.HandSize, defaultHandSize)
			defaultZero(&q.Queues, defaultQueues)
			defaultZero(&q.QueueLengthLimit, defaultQueueLengthLimit)
		}
	}
	if e := spec.Exempt; e != nil {
		if e.NominalConcurrencyShares == nil {
			e.NominalConcurrencyShares = ptr.To[int32](0)
		}
		if e.LendablePercent == nil {
			e.LendablePercent = ptr.To[int32](0)
		}
	}
}

func defaultZero(v *int32, def int32) {
	if *v == 0 {
		*v = def
	}
}

// prepareForCreate starts a level with an empty status; the handlers set
// generation 1.
func prepareForCreate(obj runtime.Object) {
	obj.(*flowcontrolv1.PriorityLevelConfiguration).Status = flowcontrolv1.PriorityLevelConfigurationStatus{}
}

var (
	metaDocs    = metav1.ObjectMeta{}.SwaggerDoc()
	queuingDocs = flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()
)

// columns are upstream's table for priority levels.
var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: metaDocs["name"]},
	{Name: "Type", Type: "string", Description: flowcontrolv1.PriorityLevelConfigurationSpec{}.SwaggerDoc()["type"]},
	{Name: "NominalConcurrencyShares", Type: "string", Description: flowcontrolv1.LimitedPriorityLevelConfiguration{}.SwaggerDoc()["nominalConcurrencyShares"]},
	{Name: "Queues", Type: "string", Description: queuingDocs["queues"]},
	{Name: "HandSize", Type: "string", Description: queuingDocs["handSize"]},
	{Name: "QueueLengthLimit", Type: "string", Description: queuingDocs["queueLengthLimit"]},
	{Name: "Age", Type: "string", Description: metaDocs["creationTimestamp"]},
}

// row gives the type and, for a limited level, its shares and, when it
// queues, its queuing numbers; "<none>" for what the level does not have.
func row(obj runtime.Object, now time.Time) []interface{} {
	pl := obj.(*flowcontrolv1.PriorityLevelConfiguration)
	var shares, queues, handSize, queueLengthLimit interface{} = "<none>", "<none>", "<none>", "<none>"
	if l := pl.Spec.Limited; l != nil {
		shares = int64(ptr.Deref(l.NominalConcurrencyShares, 0))
		if q := l.LimitResponse.Queuing; q != nil {
			queues, handSize, queueLengthLimit = int64(q.Queues), int64(q.HandSize), int64(q.QueueLengthLimit)
		}
	}
	return []interface{}{pl.Name, string(pl.Spec.Type), shares, queues, handSize, queueLengthLimit, registry.Age(pl.CreationTimestamp, now)}
}
