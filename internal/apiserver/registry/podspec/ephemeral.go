package podspec

import (
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ephemeralAllowedFields are the fields of EphemeralContainerCommon an
// ephemeral container may set. As upstream, this is an allow list: a field
// added to the API is refused until someone decides it makes sense for a
// debugging container (ports, probes, lifecycle, resources, restart policy
// are refused because nothing may rely on an ephemeral container).
var ephemeralAllowedFields = sets.New(
	"Name", "Image", "Command", "Args", "WorkingDir", "EnvFrom", "Env", "VolumeMounts", "VolumeDevices",
	"TerminationMessagePath", "TerminationMessagePolicy", "ImagePullPolicy", "SecurityContext",
	"Stdin", "StdinOnce", "TTY",
)

const ephemeralForbidden = "cannot be set for an Ephemeral Container"

// validateEphemeralOnly checks what applies only to ephemeral containers:
// the allow list of fields, no subPath mounts, and a targetContainerName
// that names a container or init container of the pod. The checks every
// container gets (name, image, env, mounts, ...) are validateContainer's.
func validateEphemeralOnly(ec *corev1.EphemeralContainer, spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	v, t := reflect.ValueOf(ec.EphemeralContainerCommon), reflect.TypeOf(ec.EphemeralContainerCommon)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if ephemeralAllowedFields.Has(f.Name) || v.Field(i).IsZero() {
			continue
		}
		errs = append(errs, field.Forbidden(path.Child(strings.Split(f.Tag.Get("json"), ",")[0]), ephemeralForbidden))
	}
	for i, m := range ec.VolumeMounts {
		if m.SubPath != "" {
			errs = append(errs, field.Forbidden(path.Child("volumeMounts").Index(i).Child("subPath"), ephemeralForbidden))
		}
		if m.SubPathExpr != "" {
			errs = append(errs, field.Forbidden(path.Child("volumeMounts").Index(i).Child("subPathExpr"), ephemeralForbidden))
		}
	}
	if target := ec.TargetContainerName; target != "" && !hasContainer(spec, target) {
		errs = append(errs, field.NotFound(path.Child("targetContainerName"), target))
	}
	return errs
}

// hasContainer is true when name is a container or an init container of
// spec (ephemeral containers cannot be targets).
func hasContainer(spec *corev1.PodSpec, name string) bool {
	for _, list := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
		for _, c := range list {
			if c.Name == name {
				return true
			}
		}
	}
	return false
}
