package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"orch/internal/apiserver/admission/tolerations"
	"orch/internal/apiserver/registry/pods"
)

// The namespace annotations PodTolerationRestriction reads, as upstream's:
// the tolerations a new pod of the namespace gets, and those its pods may
// have (JSON lists of core/v1 Tolerations).
const (
	annDefaultTolerations   = "scheduler.alpha.kubernetes.io/defaultTolerations"
	annTolerationsWhitelist = "scheduler.alpha.kubernetes.io/tolerationsWhitelist"
)

// tolerationConfig is PodTolerationRestriction's cluster-wide
// configuration (podtolerationrestriction.admission.k8s.io/v1alpha1
// Configuration): what a namespace without the annotations gets.
type tolerationConfig struct {
	APIVersion string              `json:"apiVersion"`
	Kind       string              `json:"kind"`
	Default    []corev1.Toleration `json:"default,omitempty"`
	Whitelist  []corev1.Toleration `json:"whitelist,omitempty"`
}

// loadTolerationConfig reads PodTolerationRestriction's configuration from
// the admission configuration file at path (see pluginConfiguration); none
// is an empty one.
func loadTolerationConfig(path string) (*tolerationConfig, error) {
	data, err := pluginConfiguration(path, pluginPodTolerationRestriction)
	if err != nil || data == nil {
		return &tolerationConfig{}, err
	}
	cfg := &tolerationConfig{}
	if err := yaml.UnmarshalStrict(data, cfg); err != nil {
		return nil, fmt.Errorf("%s: %s configuration: %w", path, pluginPodTolerationRestriction, err)
	}
	if cfg.APIVersion != "podtolerationrestriction.admission.k8s.io/v1alpha1" || cfg.Kind != "Configuration" {
		return nil, fmt.Errorf("%s: %s configuration is %s %s, want podtolerationrestriction.admission.k8s.io/v1alpha1 Configuration",
			path, pluginPodTolerationRestriction, cfg.APIVersion, cfg.Kind)
	}
	for name, list := range map[string][]corev1.Toleration{"default": cfg.Default, "whitelist": cfg.Whitelist} {
		if errs := validateTolerations(list, field.NewPath(name)); len(errs) > 0 {
			return nil, fmt.Errorf("%s: %s configuration: %w", path, pluginPodTolerationRestriction, errs.ToAggregate())
		}
	}
	return cfg, nil
}

// validateTolerations checks what a toleration must be for the
// configuration to make sense: a known operator and effect, an Exists
// without a value, and a keyless toleration only with Exists.
func validateTolerations(list []corev1.Toleration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range list {
		p := path.Index(i)
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			if t.Key == "" {
				errs = append(errs, field.Invalid(p.Child("operator"), t.Operator, "operator must be Exists when `key` is empty"))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(p.Child("value"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator, []string{string(corev1.TolerationOpEqual), string(corev1.TolerationOpExists)}))
		}
		switch t.Effect {
		case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, []string{string(corev1.TaintEffectNoSchedule),
				string(corev1.TaintEffectPreferNoSchedule), string(corev1.TaintEffectNoExecute)}))
		}
	}
	return errs
}

// admitPodTolerations is upstream's PodTolerationRestriction for a pod
// created (create) or updated: a new pod gets its namespace's default
// tolerations (or the cluster's), every pod but a BestEffort one
// tolerates memory pressure, and the result must be covered by the
// namespace's allow-list (or the cluster's).
func (s *Server) admitPodTolerations(ctx context.Context, pod *corev1.Pod, create bool) error {
	forbidden := func(format string, args ...any) error {
		return apierrors.NewForbidden(corev1.Resource("pods"), pod.Name, fmt.Errorf(format, args...))
	}
	ns, err := s.namespace(ctx, s.resources[corev1.SchemeGroupVersion.WithResource("namespaces")], pod.Namespace)
	if err != nil {
		return err
	}
	cluster := s.tolerations
	if cluster == nil {
		cluster = &tolerationConfig{}
	}
	var extra []corev1.Toleration
	if create {
		defaults, set, err := namespaceTolerations(ns, annDefaultTolerations)
		if err != nil {
			return forbidden("%v", err)
		}
		if !set {
			defaults = cluster.Default
		}
		extra = defaults
	}
	if pods.QOSClass(&pod.Spec) != corev1.PodQOSBestEffort {
		extra = append(extra, corev1.Toleration{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoSchedule})
	}
	if len(extra) > 0 {
		pod.Spec.Tolerations = tolerations.Merge(pod.Spec.Tolerations, extra)
	}
	if len(pod.Spec.Tolerations) == 0 {
		return nil
	}
	allowed, set, err := namespaceTolerations(ns, annTolerationsWhitelist)
	if err != nil {
		return forbidden("%v", err)
	}
	scope := "namespace"
	if !set {
		allowed, scope = cluster.Whitelist, "cluster"
	}
	if !tolerations.Allowed(pod.Spec.Tolerations, allowed) {
		return forbidden("pod tolerations (possibly merged with namespace default tolerations) conflict with its %s whitelist", scope)
	}
	return nil
}

// namespaceTolerations reads the tolerations of annotation key of ns; set
// is false when ns does not have it (an empty value is an empty list).
func namespaceTolerations(ns *corev1.Namespace, key string) (list []corev1.Toleration, set bool, err error) {
	value, ok := ns.Annotations[key]
	if !ok {
		return nil, false, nil
	}
	if value == "" {
		return []corev1.Toleration{}, true, nil
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(value)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&list); err != nil {
		return nil, true, fmt.Errorf("namespace %s has an invalid %s annotation: %v", ns.Name, key, err)
	}
	return list, true, nil
}
