package resourceclaims

import (
	"context"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/operation"
	"k8s.io/apimachinery/pkg/api/validate"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry/drautil"
	"orch/internal/apiserver/registry/podspec"
)

var configSources = []resourcev1.AllocationConfigSource{resourcev1.AllocationConfigSourceClaim, resourcev1.AllocationConfigSourceClass}

// resultKey and statusKey name an allocated device as upstream does:
// driver/pool/device, and the share ID of a shared allocation.
func resultKey(r resourcev1.DeviceRequestAllocationResult) string {
	return deviceKey(r.Driver, r.Pool, r.Device, (*string)(r.ShareID))
}

func statusKey(d resourcev1.AllocatedDeviceStatus) string {
	return deviceKey(d.Driver, d.Pool, d.Device, d.ShareID)
}

func deviceKey(driver, pool, device string, shareID *string) string {
	key := driver + "/" + pool + "/" + device
	if shareID != nil && *shareID != "" {
		key += "/" + *shareID
	}
	return key
}

// validateStatusUpdate checks a write through /status: the consumers the
// claim is reserved for (only once allocated, none added while it is
// being deleted), the status of allocated devices, and an allocation,
// which may be set once and then only removed.
func validateStatusUpdate(obj, old runtime.Object) field.ErrorList {
	c, oldC := obj.(*resourcev1.ResourceClaim), old.(*resourcev1.ResourceClaim)
	status, oldStatus := &c.Status, &oldC.Status
	p := field.NewPath("status")
	errs := drautil.ValidateSet(status.ReservedFor, resourcev1.ResourceClaimReservedForMaxSize, p.Child("reservedFor"),
		func(r resourcev1.ResourceClaimConsumerReference) types.UID { return r.UID }, validateConsumer)

	allocated := sets.New[string]()
	if status.Allocation != nil {
		for _, r := range status.Allocation.Devices.Results {
			allocated.Insert(resultKey(r))
		}
	}
	errs = append(errs, drautil.ValidateSet(status.Devices, -1, p.Child("devices"), statusKey,
		func(d resourcev1.AllocatedDeviceStatus, p *field.Path) field.ErrorList {
			return validateDeviceStatus(d, allocated, p)
		})...)

	if len(status.ReservedFor) > 0 {
		switch {
		case status.Allocation == nil:
			errs = append(errs, field.Forbidden(p.Child("reservedFor"), "may not be specified when `allocated` is not set"))
		case c.DeletionTimestamp != nil && sets.New(status.ReservedFor...).Difference(sets.New(oldStatus.ReservedFor...)).Len() > 0:
			errs = append(errs, field.Forbidden(p.Child("reservedFor"), "new entries may not be added while `deallocationRequested` or `deletionTimestamp` are set"))
		}
	}

	// A stored allocation is not checked again (the rules for new ones
	// may have tightened): it may only stay as it is or go.
	switch {
	case status.Allocation != nil && oldStatus.Allocation != nil:
		errs = append(errs, apivalidation.ValidateImmutableField(status.Allocation, oldStatus.Allocation, p.Child("allocation"))...)
	case status.Allocation != nil:
		names := drautil.GatherRequestNames(&c.Spec.Devices)
		errs = append(errs, validateAllocation(status.Allocation, names, p.Child("allocation"))...)
	}
	return errs
}

func validateConsumer(r resourcev1.ResourceClaimConsumerReference, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if r.Resource == "" {
		errs = append(errs, field.Required(p.Child("resource"), ""))
	}
	if r.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	}
	if r.UID == "" {
		errs = append(errs, field.Required(p.Child("uid"), ""))
	}
	return errs
}

// validateAllocation checks a new allocation: at most 32 results for
// requests of the claim and 64 configurations (the class's and the
// claim's), and the node selector.
func validateAllocation(a *resourcev1.AllocationResult, names drautil.RequestNames, p *field.Path) field.ErrorList {
	dp := p.Child("devices")
	errs := drautil.ValidateList(a.Devices.Results, resourcev1.AllocationResultsMaxSize, dp.Child("results"),
		func(r resourcev1.DeviceRequestAllocationResult, p *field.Path) field.ErrorList {
			return validateResult(r, names, p)
		})
	errs = append(errs, drautil.ValidateList(a.Devices.Config, 2*resourcev1.DeviceConfigMaxSize, dp.Child("config"),
		func(c resourcev1.DeviceAllocationConfiguration, p *field.Path) field.ErrorList {
			var errs field.ErrorList
			switch c.Source {
			case "":
				errs = append(errs, field.Required(p.Child("source"), ""))
			case resourcev1.AllocationConfigSourceClaim, resourcev1.AllocationConfigSourceClass:
			default:
				errs = append(errs, field.NotSupported(p.Child("source"), c.Source, configSources))
			}
			errs = append(errs, drautil.ValidateRequestRefs(c.Requests, names, p.Child("requests"))...)
			return append(errs, drautil.ValidateConfiguration(c.DeviceConfiguration, false, p)...)
		})...)
	if a.NodeSelector != nil {
		errs = append(errs, podspec.ValidateNodeSelector(a.NodeSelector, p.Child("nodeSelector"))...)
	}
	return errs
}

func validateResult(r resourcev1.DeviceRequestAllocationResult, names drautil.RequestNames, p *field.Path) field.ErrorList {
	errs := drautil.ValidateRequestRef(r.Request, names, p.Child("request"))
	errs = append(errs, drautil.ValidateDriverName(r.Driver, p.Child("driver"))...)
	errs = append(errs, drautil.ValidatePoolName(r.Pool, p.Child("pool"))...)
	errs = append(errs, drautil.ValidateLabel(r.Device, p.Child("device"))...)
	errs = append(errs, drautil.ValidateBindingConditions(r.BindingConditions, r.BindingFailureConditions, p)...)
	errs = append(errs, drautil.ValidateTolerations(r.Tolerations, p.Child("tolerations"))...)
	if r.ShareID != nil {
		errs = append(errs, validateUID(string(*r.ShareID), p.Child("shareID"))...)
	}
	return errs
}

// validateDeviceStatus checks the status of a device the claim has
// allocated: at most 8 conditions, data that is a JSON object of at most
// 10 KiB, and network data.
func validateDeviceStatus(d resourcev1.AllocatedDeviceStatus, allocated sets.Set[string], p *field.Path) field.ErrorList {
	errs := drautil.ValidateDriverName(d.Driver, p.Child("driver"))
	errs = append(errs, drautil.ValidatePoolName(d.Pool, p.Child("pool"))...)
	errs = append(errs, drautil.ValidateLabel(d.Device, p.Child("device"))...)
	if d.ShareID != nil {
		errs = append(errs, validateUID(*d.ShareID, p.Child("shareID"))...)
	}
	if key := statusKey(d); !allocated.Has(key) {
		errs = append(errs, field.Invalid(p, key, "must be an allocated device in the claim"))
	}
	if len(d.Conditions) > resourcev1.AllocatedDeviceStatusMaxConditions {
		errs = append(errs, field.TooMany(p.Child("conditions"), len(d.Conditions), resourcev1.AllocatedDeviceStatusMaxConditions))
	}
	errs = append(errs, metav1validation.ValidateConditions(d.Conditions, p.Child("conditions"))...)
	if d.Data != nil && len(d.Data.Raw) > 0 {
		errs = append(errs, drautil.ValidateRawObject(*d.Data, false, resourcev1.AllocatedDeviceStatusDataMaxLength, p.Child("data"))...)
	}
	if n := d.NetworkData; n != nil {
		np := p.Child("networkData")
		if len(n.InterfaceName) > resourcev1.NetworkDeviceDataInterfaceNameMaxLength {
			errs = append(errs, field.TooLong(np.Child("interfaceName"), "", resourcev1.NetworkDeviceDataInterfaceNameMaxLength))
		}
		if len(n.HardwareAddress) > resourcev1.NetworkDeviceDataHardwareAddressMaxLength {
			errs = append(errs, field.TooLong(np.Child("hardwareAddress"), "", resourcev1.NetworkDeviceDataHardwareAddressMaxLength))
		}
		errs = append(errs, drautil.ValidateSet(n.IPs, resourcev1.NetworkDeviceDataMaxIPs, np.Child("ips"), drautil.Self, func(ip string, p *field.Path) field.ErrorList {
			return validation.IsValidInterfaceAddress(p, ip)
		})...)
	}
	return errs
}

// validateUID checks a share ID: a UUID in its normalized, lower-case form.
func validateUID(uid string, p *field.Path) field.ErrorList {
	return validate.UUID(context.Background(), operation.Operation{}, p, &uid, nil)
}
