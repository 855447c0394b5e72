package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/warning"
	psadmission "k8s.io/pod-security-admission/admission"
	psconfig "k8s.io/pod-security-admission/admission/api"
	psload "k8s.io/pod-security-admission/admission/api/load"
	psapi "k8s.io/pod-security-admission/api"
	psmetrics "k8s.io/pod-security-admission/metrics"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/yaml"

	"orch/internal/apiserver/filters"
	"orch/internal/storage"
)

// LoadPodSecurityConfig reads the cluster's Pod Security defaults and
// exemptions from path: a PodSecurityConfiguration
// (pod-security.admission.config.k8s.io/v1), or an AdmissionConfiguration
// (apiserver.config.k8s.io/v1, as k3s's --pod-security-admission-config-file
// takes) whose PodSecurity plugin carries one inline or names its file. An
// empty path, or an AdmissionConfiguration without PodSecurity, gives
// upstream's defaults: privileged at the latest version, no exemptions.
func LoadPodSecurityConfig(path string) (*psconfig.PodSecurityConfiguration, error) {
	data, err := pluginConfiguration(path, pluginPodSecurity)
	if err != nil {
		return nil, err
	}
	cfg, err := psload.LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// pluginConfiguration is the configuration of admission plugin in the file
// at path: when the file is an AdmissionConfiguration
// (apiserver.config.k8s.io/v1, what upstream's
// --admission-control-config-file holds), the plugin's inline
// configuration or the file its entry names (relative to path's
// directory), or nil when it has no entry; otherwise the file itself. An
// empty path is nil.
func pluginConfiguration(path, plugin string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var head struct {
		Kind    string `json:"kind"`
		Plugins []struct {
			Name          string          `json:"name"`
			Path          string          `json:"path"`
			Configuration json.RawMessage `json:"configuration"`
		} `json:"plugins"`
	}
	if err := yaml.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if head.Kind != "AdmissionConfiguration" {
		return data, nil
	}
	for _, p := range head.Plugins {
		switch {
		case p.Name != plugin:
		case len(p.Configuration) > 0:
			return p.Configuration, nil
		case p.Path != "" && !filepath.IsAbs(p.Path):
			return os.ReadFile(filepath.Join(filepath.Dir(path), p.Path))
		case p.Path != "":
			return os.ReadFile(p.Path)
		}
	}
	return nil, nil
}

// newPodSecurity builds upstream's PodSecurity admission over the
// apiserver's caches of namespaces and pods, its evaluations counted on
// /metrics (pod_security_evaluations_total, …).
func (s *Server) newPodSecurity(cfg *psconfig.PodSecurityConfiguration) (*psadmission.Admission, error) {
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		return nil, err
	}
	recorder := psmetrics.NewPrometheusRecorder(psapi.GetAPIVersion())
	recorder.MustRegister(s.metrics.kube.MustRegister)
	a := &psadmission.Admission{
		Configuration:    cfg,
		Evaluator:        evaluator,
		Metrics:          recorder,
		PodSpecExtractor: psadmission.DefaultPodSpecExtractor{},
		NamespaceGetter:  cachedNamespaces{s},
		PodLister:        cachedPods{s},
	}
	if err := a.CompleteConfiguration(); err != nil {
		return nil, fmt.Errorf("pod security configuration: %w", err)
	}
	if err := a.ValidateConfiguration(); err != nil {
		return nil, fmt.Errorf("pod security configuration: %w", err)
	}
	return a, nil
}

// admitPodSecurity checks a created or updated pod, pod template owner or
// namespace against its namespace's pod-security.kubernetes.io labels: a
// violation of enforce is refused with upstream's message, of warn comes
// back as a warning.
func (s *Server) admitPodSecurity(ctx context.Context, req admissionRequest) error {
	if s.podSecurity == nil || req.obj == nil || (req.op != admission.Create && req.op != admission.Update) {
		return nil
	}
	gr := req.rs.gr
	if gr != corev1.Resource("pods") && gr != corev1.Resource("namespaces") && !s.podSecurity.PodSpecExtractor.HasPodSpec(gr) {
		return nil
	}
	u, _ := filters.UserFrom(ctx)
	attrs := &psapi.AttributesRecord{
		Name: req.name, Namespace: req.namespace, Kind: req.rs.gvk, Resource: req.rs.gvk.GroupVersion().WithResource(gr.Resource),
		Subresource: req.subresource, Operation: admissionv1.Operation(req.op), Object: req.obj, OldObject: req.old, Username: u.Name,
	}
	if gr == corev1.Resource("namespaces") {
		// A namespace is its own namespace, as upstream's attributes say.
		attrs.Namespace = req.name
	}
	result := s.podSecurity.Validate(ctx, attrs)
	for _, w := range result.Warnings {
		warning.AddWarning(ctx, "", w)
	}
	if result.Allowed {
		return nil
	}
	refusal := apierrors.NewForbidden(gr, req.name, errors.New("Not allowed by PodSecurity"))
	if r := result.Result; r != nil {
		if r.Message != "" {
			refusal.ErrStatus.Message = r.Message
		}
		if r.Reason != "" {
			refusal.ErrStatus.Reason = r.Reason
		}
		if r.Details != nil {
			refusal.ErrStatus.Details = r.Details
		}
		if r.Code != 0 {
			refusal.ErrStatus.Code = r.Code
		}
	}
	return refusal
}

// cachedNamespaces and cachedPods give PodSecurity the watch cache's
// objects, which it only reads.
type cachedNamespaces struct{ s *Server }

func (c cachedNamespaces) GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	ns, err := c.s.namespace(ctx, c.s.resources[corev1.SchemeGroupVersion.WithResource("namespaces")], name)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, apierrors.NewNotFound(corev1.Resource("namespaces"), name)
	}
	return ns, err
}

type cachedPods struct{ s *Server }

func (c cachedPods) ListPods(ctx context.Context, namespace string) ([]*corev1.Pod, error) {
	rs := c.s.resources[corev1.SchemeGroupVersion.WithResource("pods")]
	kvs, _, err := rs.cache.List(ctx, 0, rs.listPrefix(namespace))
	if err != nil {
		return nil, err
	}
	pods := make([]*corev1.Pod, 0, len(kvs))
	for _, kv := range kvs {
		pods = append(pods, kv.Value.(*corev1.Pod))
	}
	return pods, nil
}
