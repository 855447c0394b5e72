// Package registry describes each resource the apiserver serves: its names, its Go
// types, and its strategy (defaulting, validation, table columns, selectable
// fields). The generic REST handlers in internal/apiserver do the rest; one
// sub-package per resource fills in a Resource.
package registry

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/authz"
)

// Resource is everything the generic handlers need to know about one resource.
// Function fields may be nil: nil means "nothing to do" (no defaults, no extra
// validation, default table, only metadata field selectors).
type Resource struct {
	// GroupVersion and names, as they appear in discovery.
	GroupVersion schema.GroupVersion
	Resource     string // plural, lower case: "deployments"
	Kind         string // "Deployment"
	SingularName string // "deployment"
	Namespaced   bool
	ShortNames   []string
	Categories   []string

	// New and NewList return empty typed objects (&appsv1.Deployment{}, &appsv1.DeploymentList{}).
	New     func() runtime.Object
	NewList func() runtime.Object

	// HasStatus means the resource has a status subresource: the main resource
	// ignores status changes, /status ignores everything but status, and
	// metadata.generation is bumped when anything other than metadata and status changes.
	HasStatus bool
	// StatusMeta says which metadata a write through /status may change:
	// by default labels, annotations, finalizers and owner references too,
	// as most upstream status strategies let through.
	StatusMeta StatusMetaRule
	// Scale, when set, serves the scale subresource (autoscaling/v1 Scale).
	Scale *ScaleAccessor
	// UpdateRequiresResourceVersion refuses a PUT without
	// metadata.resourceVersion (upstream's AllowUnconditionalUpdate false,
	// as for devicetaintrules); other resources take it as "whatever is
	// stored now".
	UpdateRequiresResourceVersion bool

	// Default applies upstream defaulting (SetDefaults_*) in place. It runs on
	// create, update and patch, before validation.
	Default func(obj runtime.Object)
	// PrepareForCreate adjusts a new object before validation (e.g. resets status,
	// sets pod phase Pending). Generic metadata (uid, timestamps, generation) is
	// handled by the caller.
	PrepareForCreate func(obj runtime.Object)
	// PrepareForCreateWithUser, when set, runs after PrepareForCreate with
	// the user who makes the request (the zero User when there is none), for
	// what a resource records of its requestor (certificatesigningrequests).
	PrepareForCreateWithUser func(obj runtime.Object, user authz.User)
	// PrepareForUpdate adjusts an updated object given the stored one (e.g. keeps
	// fields only the server sets). Status preservation is generic (HasStatus).
	PrepareForUpdate func(obj, old runtime.Object)
	// Validate checks a new object; ObjectMeta (name, namespace, labels,
	// annotations) is validated generically by the caller.
	Validate func(obj runtime.Object) field.ErrorList
	// ValidateUpdate checks an update against the stored object (immutable fields).
	// Validate also runs on updates; this adds only update-specific checks.
	ValidateUpdate func(obj, old runtime.Object) field.ErrorList
	// ValidateCreate adds the checks that apply only to a new object (pods may
	// not be created with ephemeral containers). Validate also runs on create.
	ValidateCreate func(obj runtime.Object) field.ErrorList
	// ValidateStatusUpdate, when set, replaces Validate and ValidateUpdate
	// for writes through the status subresource (custom resources validate
	// only what /status may change, as upstream's status strategy).
	ValidateStatusUpdate func(obj, old runtime.Object) field.ErrorList
	// Prune, when set, drops the fields the resource's schema does not know
	// (custom resources without x-kubernetes-preserve-unknown-fields) and
	// returns their paths ("spec.foo"), which the handlers report as unknown
	// fields per the request's fieldValidation. It runs on every object
	// decoded from a request or from storage.
	Prune func(obj runtime.Object) []string
	// SpecSubresources are the subresources, by name, that take and return the
	// whole object but change only part of its spec (pods/ephemeralcontainers).
	SpecSubresources map[string]SpecSubresource
	// Subresources are the subresources, by name, that take and return the
	// whole object and whose own PrepareForUpdate decides what a write
	// through them changes (certificatesigningrequests/approval). An entry
	// named "status" replaces the generic handling of /status (HasStatus
	// must still be set).
	Subresources map[string]Subresource
	// NameValidation says which rule metadata.name follows; the zero value is
	// DNS-1123 subdomain, as for most upstream resources.
	NameValidation NameRule

	// Columns and Row produce the server-side table kubectl prints. Row returns
	// the cells for one object, the name first, in the order of Columns. Columns
	// with Priority 1 are the ones `-o wide` adds.
	Columns []metav1.TableColumnDefinition
	Row     func(obj runtime.Object, now time.Time) []interface{}
	// RowsLess, when set, orders the rows of a listed table, as upstream's
	// printer sorts some lists (flowschemas by matching precedence);
	// otherwise the rows follow the list.
	RowsLess func(a, b runtime.Object) bool

	// SelectableFields returns the field-selector fields beyond metadata.name and
	// metadata.namespace (e.g. spec.nodeName for pods).
	SelectableFields func(obj runtime.Object) fields.Set

	// StoredAs, when set, makes this resource another version of one the
	// server stores (autoscaling/v1 HorizontalPodAutoscalers of the v2
	// ones, events.k8s.io Events of core Events): the same objects, keys
	// and resourceVersions, converted on the way in and out.
	StoredAs *StoredVersion
}

// StoredVersion is the stored resource a Resource is another version of,
// and the conversions between the two.
type StoredVersion struct {
	// GroupVersion, Kind and Resource name the stored resource, which is
	// registered too.
	GroupVersion schema.GroupVersion
	Kind         string
	Resource     string
	// New returns an empty stored object.
	New func() runtime.Object
	// ToStored converts an object of this resource to the stored version;
	// FromStored converts back. Neither may change its argument.
	ToStored   func(obj runtime.Object) (runtime.Object, error)
	FromStored func(stored runtime.Object) (runtime.Object, error)
}

// StatusMetaRule is what of metadata a status write keeps from the stored
// object.
type StatusMetaRule int

const (
	// StatusChangesMeta lets a status write change labels, annotations,
	// finalizers and owner references (jobs, services, nodes ...).
	StatusChangesMeta StatusMetaRule = iota
	// StatusKeepsMeta keeps them as stored, as upstream's
	// ResetObjectMetaForStatus (pods, volume attachments ...).
	StatusKeepsMeta
	// StatusKeepsLabels keeps only the labels (deployments).
	StatusKeepsLabels
)

// NameRule is a rule that metadata.name must follow.
type NameRule int

const (
	// NameSubdomain is a DNS-1123 subdomain (most resources).
	NameSubdomain NameRule = iota
	// NameLabel is a DNS-1123 label (namespaces, services).
	NameLabel
	// NamePathSegment is any string that is safe as a path segment (rbac, ...).
	NamePathSegment
	// NameLabel1035 is a DNS-1035 label (services).
	NameLabel1035
	// NameIP is an IP address in its canonical form (ipaddresses). As
	// upstream has no name generator for them, a generateName is taken as
	// the name itself.
	NameIP
)

// IPName is the name validation of NameIP: why name (or a generateName,
// checked the same) is not an IP address in canonical form.
func IPName(name string, _ bool) []string {
	var msgs []string
	for _, err := range validation.IsValidIP(&field.Path{}, name) {
		msgs = append(msgs, err.Detail)
	}
	return msgs
}

// SpecSubresource is a subresource such as pods/ephemeralcontainers: get,
// update and patch on the whole object, of which a write keeps only what
// PrepareForUpdate lets through. As for /status, the stored status, labels,
// annotations, finalizers and owner references stay as they are.
type SpecSubresource struct {
	// PrepareForUpdate resets in obj, from old, every part of the spec the
	// subresource may not change. It runs before defaulting and validation.
	PrepareForUpdate func(obj, old runtime.Object)
	// ValidateUpdate replaces Resource.ValidateUpdate for writes through the
	// subresource (Validate still runs).
	ValidateUpdate func(obj, old runtime.Object) field.ErrorList
}

// Subresource is a subresource such as certificatesigningrequests/approval:
// get, update and patch on the whole object. Unlike for /status and a
// SpecSubresource, the handlers keep nothing of the stored object but the
// metadata the server owns (uid, creation time, generation, ...), and the
// resource's own PrepareForUpdate does not run: PrepareForUpdate here copies
// from old whatever the subresource may not change, labels and annotations
// included when it may not change them.
type Subresource struct {
	// PrepareForUpdate resets in obj, from old, everything the subresource
	// may not change. It runs after defaulting and mutating admission, in
	// place of Resource.PrepareForUpdate, before validation.
	PrepareForUpdate func(obj, old runtime.Object)
	// ValidateUpdate replaces Resource.ValidateUpdate for writes through the
	// subresource (Validate still runs).
	ValidateUpdate func(obj, old runtime.Object) field.ErrorList
}

// ScaleAccessor reads and writes the replica count of a scalable resource.
type ScaleAccessor struct {
	// SpecReplicas returns spec.replicas (upstream default 1 when unset).
	SpecReplicas func(obj runtime.Object) int32
	// SetSpecReplicas sets spec.replicas.
	SetSpecReplicas func(obj runtime.Object, replicas int32)
	// StatusReplicas returns status.replicas.
	StatusReplicas func(obj runtime.Object) int32
	// Selector returns the label selector in its string form for status.selector.
	Selector func(obj runtime.Object) string
}

// Age formats the time since t like kubectl does (e.g. "5m", "3d4h").
func Age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}
