// Package resourceclaims is the registry entry for resource.k8s.io/v1
// resourceclaims and their status subresource, with upstream's defaults,
// validation (the spec is immutable; the allocation, once set, too) and
// table. Allocating devices is the scheduler's work; upstream's checks
// that need the namespace or the authorizer (admin access only in
// namespaces labelled for it, who may write which part of the status) are
// not done.
package resourceclaims

import (
	"strings"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/drautil"
)

// Resource returns the resourceclaims entry. Validate is nil: a new claim
// is checked whole, an update only for a changed spec, and a write
// through /status only for its status.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:     resourcev1.SchemeGroupVersion,
		Resource:         "resourceclaims",
		Kind:             "ResourceClaim",
		SingularName:     "resourceclaim",
		Namespaced:       true,
		New:              func() runtime.Object { return &resourcev1.ResourceClaim{} },
		NewList:          func() runtime.Object { return &resourcev1.ResourceClaimList{} },
		HasStatus:        true,
		Default:          setDefaults,
		PrepareForCreate: prepareForCreate,
		PrepareForUpdate: prepareForUpdate,
		ValidateCreate: func(obj runtime.Object) field.ErrorList {
			return drautil.ValidateClaimSpec(&obj.(*resourcev1.ResourceClaim).Spec, field.NewPath("spec"))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			c, oldC := obj.(*resourcev1.ResourceClaim), old.(*resourcev1.ResourceClaim)
			return apivalidation.ValidateImmutableField(c.Spec, oldC.Spec, field.NewPath("spec"))
		},
		ValidateStatusUpdate: validateStatusUpdate,
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "State", Type: "string", Description: "A summary of the current state (allocated, pending, reserved, etc.)."},
			{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		},
		Row: func(obj runtime.Object, now time.Time) []interface{} {
			c := obj.(*resourcev1.ResourceClaim)
			return []interface{}{c.Name, state(c), registry.Age(c.CreationTimestamp, now)}
		},
	}
}

// setDefaults is upstream's: the defaults of the requests, and the
// operator Equal for the tolerations of allocated devices.
func setDefaults(obj runtime.Object) {
	c := obj.(*resourcev1.ResourceClaim)
	drautil.DefaultClaimSpec(&c.Spec)
	if a := c.Status.Allocation; a != nil {
		for i := range a.Devices.Results {
			drautil.DefaultTolerations(a.Devices.Results[i].Tolerations)
		}
	}
}

// prepareForCreate starts a claim with an empty status and, as upstream,
// without a generation; it drops the fields of features off by default.
func prepareForCreate(obj runtime.Object) {
	c := obj.(*resourcev1.ResourceClaim)
	c.Status = resourcev1.ResourceClaimStatus{}
	c.Generation = 0
	drautil.DropDisabledClaimFields(&c.Spec)
}

// prepareForUpdate drops the fields of features off by default and, once
// devices are deallocated, their device status. On a write to the main
// resource the status is the stored one, so only the spec changes here;
// through /status, the spec.
func prepareForUpdate(obj, old runtime.Object) {
	c, oldC := obj.(*resourcev1.ResourceClaim), old.(*resourcev1.ResourceClaim)
	drautil.DropDisabledClaimFields(&c.Spec)
	if a := c.Status.Allocation; a != nil {
		for i := range a.Devices.Results {
			// Optional node operations are alpha, off by default.
			a.Devices.Results[i].SkipNodeOperations = nil
		}
	}
	dropDeallocatedDevices(&c.Status, &oldC.Status)
}

// dropDeallocatedDevices removes the status of the devices the stored
// allocation had and the new one has not, so that clients that deallocate
// need not know about device status.
func dropDeallocatedDevices(status, old *resourcev1.ResourceClaimStatus) {
	if old.Allocation == nil {
		return
	}
	gone := map[string]bool{}
	for _, r := range old.Allocation.Devices.Results {
		gone[resultKey(r)] = true
	}
	if status.Allocation != nil {
		for _, r := range status.Allocation.Devices.Results {
			delete(gone, resultKey(r))
		}
	}
	var kept []resourcev1.AllocatedDeviceStatus
	for _, d := range status.Devices {
		if !gone[statusKey(d)] {
			kept = append(kept, d)
		}
	}
	status.Devices = kept
}

// state is upstream's summary: deleted, then allocated (and reserved) or
// pending.
func state(c *resourcev1.ResourceClaim) string {
	var states []string
	if c.DeletionTimestamp != nil {
		states = append(states, "deleted")
	}
	switch {
	case c.Status.Allocation != nil:
		states = append(states, "allocated")
		if len(c.Status.ReservedFor) > 0 {
			states = append(states, "reserved")
		}
	case c.DeletionTimestamp == nil:
		states = append(states, "pending")
	}
	return strings.Join(states, ",")
}
