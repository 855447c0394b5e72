package podspec

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateResourceRequirements checks the requests and limits of a container
// (forContainer) or of a whole pod.
func validateResourceRequirements(r *corev1.ResourceRequirements, forContainer bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	limPath, reqPath := path.Child("limits"), path.Child("requests")
	for name, q := range r.Limits {
		p := limPath.Key(string(name))
		errs = append(errs, validateComputeResourceName(name, forContainer, p)...)
		errs = append(errs, ValidateResourceQuantity(name, q, p)...)
	}
	for name, q := range r.Requests {
		p := reqPath.Key(string(name))
		errs = append(errs, validateComputeResourceName(name, forContainer, p)...)
		errs = append(errs, ValidateResourceQuantity(name, q, p)...)
		limit, hasLimit := r.Limits[name]
		switch {
		case hasLimit && q.Cmp(limit) > 0:
			errs = append(errs, field.Invalid(p, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		case !overcommitAllowed(name) && !hasLimit:
			errs = append(errs, field.Required(limPath, "Limit must be set for non overcommitable resources"))
		case !overcommitAllowed(name) && q.Cmp(limit) != 0:
			errs = append(errs, field.Invalid(p, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
		}
	}
	return errs
}

// ValidateContainerResources checks requests and limits as a container's
// are checked; upstream checks a RuntimeClass's overhead with it too.
func ValidateContainerResources(r *corev1.ResourceRequirements, path *field.Path) field.ErrorList {
	return validateResourceRequirements(r, true, path)
}

// ValidateResourceQuantity checks one quantity of a resource list: never
// negative, and a whole number for resources that cannot be divided.
func ValidateResourceQuantity(name corev1.ResourceName, q resource.Quantity, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if q.Sign() < 0 {
		errs = append(errs, field.Invalid(path, q.String(), "must be greater than or equal to 0"))
	}
	if isIntegerResource(name) && q.MilliValue()%1000 != 0 {
		errs = append(errs, field.Invalid(path, q.String(), "must be an integer"))
	}
	return errs
}

// ValidateResourceName checks that a resource name is a qualified name.
func ValidateResourceName(name corev1.ResourceName, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(string(name)) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	return errs
}

func validateComputeResourceName(name corev1.ResourceName, forContainer bool, path *field.Path) field.ErrorList {
	errs := ValidateResourceName(name, path)
	if len(errs) > 0 {
		return errs
	}
	s := string(name)
	if !strings.Contains(s, "/") {
		standard := name == corev1.ResourceCPU || name == corev1.ResourceMemory || strings.HasPrefix(s, corev1.ResourceHugePagesPrefix)
		if forContainer && (standard || name == corev1.ResourceEphemeralStorage) {
			return nil
		}
		if !forContainer && standard {
			return nil
		}
		what := "containers"
		if !forContainer {
			what = "pod-level resources"
		}
		return field.ErrorList{field.Invalid(path, name, "must be a standard resource for "+what)}
	}
	if !forContainer {
		return field.ErrorList{field.NotSupported(path, name, []string{"cpu", "memory", "hugepages-*"})}
	}
	return nil
}

// isNativeResource is a resource without a domain or in kubernetes.io.
func isNativeResource(name corev1.ResourceName) bool {
	s := string(name)
	return !strings.Contains(s, "/") || strings.Contains(s, corev1.ResourceDefaultNamespacePrefix)
}

// overcommitAllowed is true for resources whose request may be below the limit.
func overcommitAllowed(name corev1.ResourceName) bool {
	return isNativeResource(name) && !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// isIntegerResource is true for extended resources, which cannot be split.
func isIntegerResource(name corev1.ResourceName) bool {
	return !isNativeResource(name) && !strings.HasPrefix(string(name), corev1.ResourceAttachableVolumesPrefix)
}

func validateContainerSecurityContext(sc *corev1.SecurityContext, path *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	if sc.RunAsUser != nil {
		errs = append(errs, validID(*sc.RunAsUser, validation.IsValidUserID, path.Child("runAsUser"))...)
	}
	if sc.RunAsGroup != nil {
		errs = append(errs, validID(*sc.RunAsGroup, validation.IsValidGroupID, path.Child("runAsGroup"))...)
	}
	if sc.Privileged != nil && *sc.Privileged && sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		errs = append(errs, field.Invalid(path, sc, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
	}
	if sc.Capabilities != nil && sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		for _, c := range sc.Capabilities.Add {
			if c == "CAP_SYS_ADMIN" || c == "SYS_ADMIN" {
				errs = append(errs, field.Invalid(path, sc, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
			}
		}
	}
	if sc.ProcMount != nil {
		supported := []string{string(corev1.DefaultProcMount), string(corev1.UnmaskedProcMount)}
		if !contains(supported, string(*sc.ProcMount)) {
			errs = append(errs, field.NotSupported(path.Child("procMount"), *sc.ProcMount, supported))
		}
	}
	errs = append(errs, validateSeccomp(sc.SeccompProfile, path.Child("seccompProfile"))...)
	return errs
}

func validatePodSecurityContext(sc *corev1.PodSecurityContext, hostNetwork, hostIPC bool, path *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	if sc.RunAsUser != nil {
		errs = append(errs, validID(*sc.RunAsUser, validation.IsValidUserID, path.Child("runAsUser"))...)
	}
	if sc.RunAsGroup != nil {
		errs = append(errs, validID(*sc.RunAsGroup, validation.IsValidGroupID, path.Child("runAsGroup"))...)
	}
	if sc.FSGroup != nil {
		errs = append(errs, validID(*sc.FSGroup, validation.IsValidGroupID, path.Child("fsGroup"))...)
	}
	for i, g := range sc.SupplementalGroups {
		errs = append(errs, validID(g, validation.IsValidGroupID, path.Child("supplementalGroups").Index(i))...)
	}
	if sc.FSGroupChangePolicy != nil {
		supported := []string{string(corev1.FSGroupChangeAlways), string(corev1.FSGroupChangeOnRootMismatch)}
		if !contains(supported, string(*sc.FSGroupChangePolicy)) {
			errs = append(errs, field.NotSupported(path.Child("fsGroupChangePolicy"), *sc.FSGroupChangePolicy, supported))
		}
	}
	errs = append(errs, validateSysctls(sc.Sysctls, hostNetwork, hostIPC, path.Child("sysctls"))...)
	errs = append(errs, validateSeccomp(sc.SeccompProfile, path.Child("seccompProfile"))...)
	return errs
}

func validateSeccomp(p *corev1.SeccompProfile, path *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	supported := []string{string(corev1.SeccompProfileTypeLocalhost), string(corev1.SeccompProfileTypeRuntimeDefault), string(corev1.SeccompProfileTypeUnconfined)}
	if !contains(supported, string(p.Type)) {
		return field.ErrorList{field.NotSupported(path.Child("type"), p.Type, supported)}
	}
	if p.Type == corev1.SeccompProfileTypeLocalhost && (p.LocalhostProfile == nil || *p.LocalhostProfile == "") {
		return field.ErrorList{field.Required(path.Child("localhostProfile"), "must be set when seccomp type is Localhost")}
	}
	if p.Type != corev1.SeccompProfileTypeLocalhost && p.LocalhostProfile != nil {
		return field.ErrorList{field.Invalid(path.Child("localhostProfile"), p.LocalhostProfile, "can only be set when seccomp type is Localhost")}
	}
	return nil
}

func validID(id int64, check func(int64) []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range check(id) {
		errs = append(errs, field.Invalid(path, id, msg))
	}
	return errs
}

func validatePortNumOrName(port intstr.IntOrString, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if port.Type == intstr.Int {
		for _, msg := range validation.IsValidPortNum(port.IntValue()) {
			errs = append(errs, field.Invalid(path, port.IntValue(), msg))
		}
		return errs
	}
	if port.StrVal == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	for _, msg := range validation.IsValidPortName(port.StrVal) {
		errs = append(errs, field.Invalid(path, port.StrVal, msg))
	}
	return errs
}

// sysctlName is upstream's rule for sysctl names: dot- or slash-separated
// segments of lower-case letters, digits, '-' and '_'.
var sysctlName = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)

const maxSysctlName = 253

// validateSysctls checks a pod's sysctls as upstream: valid names, each
// once, and none of the network's (or IPC's) when the pod shares the
// host's network (or IPC) namespace.
func validateSysctls(sysctls []corev1.Sysctl, hostNetwork, hostIPC bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, s := range sysctls {
		p := path.Index(i).Child("name")
		switch {
		case s.Name == "":
			errs = append(errs, field.Required(p, ""))
		case len(s.Name) > maxSysctlName || !sysctlName.MatchString(s.Name):
			errs = append(errs, field.Invalid(p, s.Name, fmt.Sprintf("must have at most %d characters and match regex %s", maxSysctlName, sysctlName)))
		case seen[s.Name]:
			errs = append(errs, field.Duplicate(p, s.Name))
		}
		seen[s.Name] = true
		name := strings.ReplaceAll(s.Name, "/", ".")
		switch {
		case hostNetwork && strings.HasPrefix(name, "net."):
			errs = append(errs, field.Invalid(p, s.Name, "may not be specified when 'hostNetwork' is true"))
		case hostIPC && ipcSysctl(name):
			errs = append(errs, field.Invalid(p, s.Name, "may not be specified when 'hostIPC' is true"))
		}
	}
	return errs
}

// ipcSysctl is true for the sysctls of the IPC namespace.
func ipcSysctl(name string) bool {
	switch name {
	case "kernel.sem", "kernel.shmall", "kernel.shmmax", "kernel.shmmni", "kernel.shm_rmid_forced",
		"kernel.msgmax", "kernel.msgmnb", "kernel.msgmni":
		return true
	}
	return strings.HasPrefix(name, "fs.mqueue.")
}
