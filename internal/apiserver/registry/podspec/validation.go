package podspec

import (
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	supportedRestartPolicies = []string{string(corev1.RestartPolicyAlways), string(corev1.RestartPolicyNever), string(corev1.RestartPolicyOnFailure)}
	supportedDNSPolicies     = []string{string(corev1.DNSClusterFirst), string(corev1.DNSClusterFirstWithHostNet), string(corev1.DNSDefault), string(corev1.DNSNone)}
)

const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
)

// ValidatePodTemplateSpec checks a pod template: its labels and annotations
// and its spec. Ephemeral containers are not allowed in templates.
func ValidatePodTemplateSpec(t *corev1.PodTemplateSpec, path *field.Path) field.ErrorList {
	if t == nil {
		return nil
	}
	var errs field.ErrorList
	metaPath := path.Child("metadata")
	errs = append(errs, metav1validation.ValidateLabels(t.Labels, metaPath.Child("labels"))...)
	errs = append(errs, apivalidation.ValidateAnnotations(t.Annotations, metaPath.Child("annotations"))...)
	specPath := path.Child("spec")
	errs = append(errs, ValidatePodSpec(&t.Spec, specPath)...)
	if len(t.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(specPath.Child("ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return errs
}

// ValidatePodSpec checks a defaulted pod spec: containers, volumes and the
// pod-level settings.
func ValidatePodSpec(spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	volumes, errs := validateVolumes(spec.Volumes, path.Child("volumes"))
	pc := &podContext{
		volumes:     volumes,
		names:       sets.New[string](),
		hostNetwork: spec.HostNetwork,
		hostPorts:   sets.New[string](),
	}
	errs = append(errs, validateContainers(spec.InitContainers, initContainer, pc, path.Child("initContainers"))...)
	errs = append(errs, validateContainers(spec.Containers, regularContainer, pc, path.Child("containers"))...)
	for i := range spec.EphemeralContainers {
		ec := &spec.EphemeralContainers[i]
		ecPath := path.Child("ephemeralContainers").Index(i)
		errs = append(errs, validateContainer((*corev1.Container)(&ec.EphemeralContainerCommon), ephemeralContainer, pc, ecPath)...)
		errs = append(errs, validateEphemeralOnly(ec, spec, ecPath)...)
	}

	switch {
	case spec.RestartPolicy == "":
		errs = append(errs, field.Required(path.Child("restartPolicy"), ""))
	case !contains(supportedRestartPolicies, string(spec.RestartPolicy)):
		errs = append(errs, field.NotSupported(path.Child("restartPolicy"), spec.RestartPolicy, supportedRestartPolicies))
	}
	switch {
	case spec.DNSPolicy == "":
		errs = append(errs, field.Required(path.Child("dnsPolicy"), ""))
	case !contains(supportedDNSPolicies, string(spec.DNSPolicy)):
		errs = append(errs, field.NotSupported(path.Child("dnsPolicy"), spec.DNSPolicy, supportedDNSPolicies))
	}
	errs = append(errs, validateDNSConfig(spec.DNSConfig, spec.DNSPolicy, path.Child("dnsConfig"))...)
	if spec.TerminationGracePeriodSeconds != nil {
		errs = append(errs, nonNegative(*spec.TerminationGracePeriodSeconds, path.Child("terminationGracePeriodSeconds"))...)
	}
	if d := spec.ActiveDeadlineSeconds; d != nil && (*d < 1 || *d > math.MaxInt32) {
		errs = append(errs, field.Invalid(path.Child("activeDeadlineSeconds"), *d, validation.InclusiveRangeError(1, math.MaxInt32)))
	}
	errs = append(errs, metav1validation.ValidateLabels(spec.NodeSelector, path.Child("nodeSelector"))...)
	if spec.ServiceAccountName != "" {
		errs = append(errs, dns1123Subdomain(path.Child("serviceAccountName"), spec.ServiceAccountName)...)
	}
	if spec.NodeName != "" {
		errs = append(errs, dns1123Subdomain(path.Child("nodeName"), spec.NodeName)...)
	}
	if spec.Hostname != "" {
		errs = append(errs, dns1123Label(path.Child("hostname"), spec.Hostname)...)
	}
	if spec.Subdomain != "" {
		errs = append(errs, dns1123Label(path.Child("subdomain"), spec.Subdomain)...)
	}
	if spec.PriorityClassName != "" {
		errs = append(errs, dns1123Subdomain(path.Child("priorityClassName"), spec.PriorityClassName)...)
	}
	if spec.RuntimeClassName != nil {
		errs = append(errs, dns1123Subdomain(path.Child("runtimeClassName"), *spec.RuntimeClassName)...)
	}
	if spec.PreemptionPolicy != nil {
		supported := []string{string(corev1.PreemptLowerPriority), string(corev1.PreemptNever)}
		if !contains(supported, string(*spec.PreemptionPolicy)) {
			errs = append(errs, field.NotSupported(path.Child("preemptionPolicy"), *spec.PreemptionPolicy, supported))
		}
	}
	if spec.ShareProcessNamespace != nil && *spec.ShareProcessNamespace && spec.HostPID {
		errs = append(errs, field.Invalid(path.Child("shareProcessNamespace"), true, "ShareProcessNamespace and HostPID cannot both be enabled"))
	}
	if spec.OS != nil {
		supported := []string{string(corev1.Linux), string(corev1.Windows)}
		if !contains(supported, string(spec.OS.Name)) {
			errs = append(errs, field.NotSupported(path.Child("os", "name"), spec.OS.Name, supported))
		}
	}
	for i, s := range spec.ImagePullSecrets {
		if s.Name == "" {
			continue // upstream only warns
		}
		errs = append(errs, dns1123Subdomain(path.Child("imagePullSecrets").Index(i).Child("name"), s.Name)...)
	}
	for i, g := range spec.ReadinessGates {
		for _, msg := range validation.IsQualifiedName(string(g.ConditionType)) {
			errs = append(errs, field.Invalid(path.Child("readinessGates").Index(i).Child("conditionType"), g.ConditionType, msg))
		}
	}
	gates := sets.New[string]()
	for i, g := range spec.SchedulingGates {
		p := path.Child("schedulingGates").Index(i)
		for _, msg := range validation.IsQualifiedName(g.Name) {
			errs = append(errs, field.Invalid(p, g.Name, msg))
		}
		if gates.Has(g.Name) {
			errs = append(errs, field.Duplicate(p, g.Name))
		}
		gates.Insert(g.Name)
	}
	errs = append(errs, validatePodSecurityContext(spec.SecurityContext, spec.HostNetwork, spec.HostIPC, path.Child("securityContext"))...)
	errs = append(errs, validateHostAliases(spec.HostAliases, path.Child("hostAliases"))...)
	errs = append(errs, ValidateTolerations(spec.Tolerations, path.Child("tolerations"))...)
	errs = append(errs, validateAffinity(spec.Affinity, path.Child("affinity"))...)
	errs = append(errs, validateTopologySpread(spec.TopologySpreadConstraints, path.Child("topologySpreadConstraints"))...)
	if spec.Resources != nil {
		errs = append(errs, validateResourceRequirements(spec.Resources, false, path.Child("resources"))...)
	}
	for name, q := range spec.Overhead {
		errs = append(errs, ValidateResourceQuantity(name, q, path.Child("overhead").Key(string(name)))...)
	}
	return errs
}

func validateDNSConfig(cfg *corev1.PodDNSConfig, policy corev1.DNSPolicy, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if policy == corev1.DNSNone {
		if cfg == nil {
			return field.ErrorList{field.Required(path, fmt.Sprintf("must provide `dnsConfig` when `dnsPolicy` is %s", corev1.DNSNone))}
		}
		if len(cfg.Nameservers) == 0 {
			errs = append(errs, field.Required(path.Child("nameservers"), fmt.Sprintf("must provide at least one DNS nameserver when `dnsPolicy` is %s", corev1.DNSNone)))
		}
	}
	if cfg == nil {
		return errs
	}
	if len(cfg.Nameservers) > maxDNSNameservers {
		errs = append(errs, field.Invalid(path.Child("nameservers"), cfg.Nameservers, fmt.Sprintf("must not have more than %v nameservers", maxDNSNameservers)))
	}
	for i, ns := range cfg.Nameservers {
		errs = append(errs, validation.IsValidIP(path.Child("nameservers").Index(i), ns)...)
	}
	if len(cfg.Searches) > maxDNSSearchPaths {
		errs = append(errs, field.Invalid(path.Child("searches"), cfg.Searches, fmt.Sprintf("must not have more than %v search paths", maxDNSSearchPaths)))
	}
	total := 0
	for i, s := range cfg.Searches {
		total += len(s)
		if s == "." {
			continue
		}
		trimmed := s
		if len(trimmed) > 0 && trimmed[len(trimmed)-1] == '.' {
			trimmed = trimmed[:len(trimmed)-1]
		}
		errs = append(errs, dns1123Subdomain(path.Child("searches").Index(i), trimmed)...)
	}
	if total+len(cfg.Searches)-1 > maxDNSSearchListChars {
		errs = append(errs, field.Invalid(path.Child("searches"), cfg.Searches, fmt.Sprintf("must not have more than %v characters (including spaces) in the search list", maxDNSSearchListChars)))
	}
	for i, o := range cfg.Options {
		if o.Name == "" {
			errs = append(errs, field.Required(path.Child("options").Index(i), "Option.Name must not be empty"))
		}
	}
	return errs
}

func validateHostAliases(aliases []corev1.HostAlias, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, a := range aliases {
		p := path.Index(i)
		if a.IP == "" {
			errs = append(errs, field.Required(p.Child("ip"), ""))
		} else {
			errs = append(errs, validation.IsValidIP(p.Child("ip"), a.IP)...)
		}
		for j, h := range a.Hostnames {
			errs = append(errs, dns1123Subdomain(p.Child("hostnames").Index(j), h)...)
		}
	}
	return errs
}

var (
	supportedTolerationOperators = []string{string(corev1.TolerationOpEqual), string(corev1.TolerationOpExists)}
	supportedTaintEffects        = []string{string(corev1.TaintEffectNoExecute), string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectPreferNoSchedule)}
)

// ValidateTolerations checks a pod's tolerations.
func ValidateTolerations(tolerations []corev1.Toleration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range tolerations {
		p := path.Index(i)
		if t.Key != "" {
			for _, msg := range validation.IsQualifiedName(t.Key) {
				errs = append(errs, field.Invalid(p.Child("key"), t.Key, msg))
			}
		}
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			errs = append(errs, field.Invalid(p.Child("operator"), t.Operator, "operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(p.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			for _, msg := range validation.IsValidLabelValue(t.Value) {
				errs = append(errs, field.Invalid(p.Child("operator"), t.Value, msg))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(p.Child("operator"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator, supportedTolerationOperators))
		}
		if t.Effect != "" && !contains(supportedTaintEffects, string(t.Effect)) {
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, supportedTaintEffects))
		}
	}
	return errs
}

func validateLabelSelector(s *metav1.LabelSelector, path *field.Path) field.ErrorList {
	return metav1validation.ValidateLabelSelector(s, metav1validation.LabelSelectorValidationOptions{}, path)
}
