package staticpods

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// validate checks what the pod workers and the mirror pod need of a
// static pod: a valid name and namespace, containers with unique, valid
// names and an image, known policies, and no reference to API objects.
// Upstream validates the whole pod here; the API validates the rest when
// the mirror pod is created, and a pod it refuses still runs, without a
// mirror (see the package doc).
func validate(pod *corev1.Pod) error {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if msgs := validation.IsDNS1123Subdomain(pod.Name); len(msgs) > 0 {
		bad("metadata.name %q (with the node name appended): %s", pod.Name, strings.Join(msgs, "; "))
	}
	if msgs := validation.IsDNS1123Label(pod.Namespace); len(msgs) > 0 {
		bad("metadata.namespace %q: %s", pod.Namespace, strings.Join(msgs, "; "))
	}
	if len(pod.Spec.Containers) == 0 {
		bad("spec.containers: at least one container is required")
	}
	names := map[string]bool{}
	check := func(field string, c *corev1.Container) {
		if msgs := validation.IsDNS1123Label(c.Name); len(msgs) > 0 {
			bad("%s.name %q: %s", field, c.Name, strings.Join(msgs, "; "))
		} else if names[c.Name] {
			bad("%s.name %q: the name is used by another container of the pod", field, c.Name)
		}
		names[c.Name] = true
		if strings.TrimSpace(c.Image) == "" {
			bad("%s.image: an image is required", field)
		}
	}
	for i := range pod.Spec.InitContainers {
		check(fmt.Sprintf("spec.initContainers[%d]", i), &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		check(fmt.Sprintf("spec.containers[%d]", i), &pod.Spec.Containers[i])
	}
	if len(pod.Spec.EphemeralContainers) > 0 {
		bad("spec.ephemeralContainers: a static pod may not have ephemeral containers")
	}
	switch pod.Spec.RestartPolicy {
	case corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever:
	default:
		bad("spec.restartPolicy %q: must be Always, OnFailure or Never", pod.Spec.RestartPolicy)
	}
	switch pod.Spec.DNSPolicy {
	case corev1.DNSClusterFirst, corev1.DNSClusterFirstWithHostNet, corev1.DNSDefault, corev1.DNSNone:
	default:
		bad("spec.dnsPolicy %q: must be ClusterFirst, ClusterFirstWithHostNet, Default or None", pod.Spec.DNSPolicy)
	}
	if err := apiReference(pod); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// apiReference refuses, as upstream does, a static pod that needs objects
// of the API to run: a static pod must run with the API out of reach.
func apiReference(pod *corev1.Pod) error {
	refuse := func(what string) error { return fmt.Errorf("static pods may not reference %s", what) }
	spec := &pod.Spec
	if spec.ServiceAccountName != "" {
		return refuse("serviceaccounts")
	}
	if len(spec.ImagePullSecrets) > 0 {
		return refuse("secrets")
	}
	if len(spec.ResourceClaims) > 0 {
		return refuse("resourceclaims")
	}
	var containers []*corev1.Container
	for i := range spec.InitContainers {
		containers = append(containers, &spec.InitContainers[i])
	}
	for i := range spec.Containers {
		containers = append(containers, &spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		containers = append(containers, (*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	for _, c := range containers {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				return refuse("secrets")
			}
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				return refuse("configmaps")
			}
		}
		for _, f := range c.EnvFrom {
			if f.SecretRef != nil {
				return refuse("secrets")
			}
			if f.ConfigMapRef != nil {
				return refuse("configmaps")
			}
		}
	}
	for _, v := range spec.Volumes {
		if what := volumeReference(&v.VolumeSource); what != "" {
			return refuse(what)
		}
	}
	return nil
}

// volumeReference names the API objects a volume needs, "" for none.
func volumeReference(v *corev1.VolumeSource) string {
	switch {
	case v.CephFS != nil && v.CephFS.SecretRef != nil, v.Cinder != nil && v.Cinder.SecretRef != nil,
		v.FlexVolume != nil && v.FlexVolume.SecretRef != nil, v.ISCSI != nil && v.ISCSI.SecretRef != nil,
		v.RBD != nil && v.RBD.SecretRef != nil, v.ScaleIO != nil && v.ScaleIO.SecretRef != nil,
		v.StorageOS != nil && v.StorageOS.SecretRef != nil:
		return "secrets"
	case v.ConfigMap != nil:
		return "configmaps (via configmap volumes)"
	case v.Secret != nil:
		return "secrets (via secret volumes)"
	case v.CSI != nil:
		return "csidrivers (via CSI volumes)"
	case v.Glusterfs != nil:
		return "endpoints (via glusterFS volumes)"
	case v.PersistentVolumeClaim != nil:
		return "persistentvolumeclaims"
	case v.Ephemeral != nil:
		return "persistentvolumeclaims (via ephemeral volumes)"
	case v.AzureFile != nil:
		return "secrets (via azureFile volumes)"
	case v.Projected != nil:
		for _, s := range v.Projected.Sources {
			switch {
			case s.ConfigMap != nil:
				return "configmaps (via projected volumes)"
			case s.Secret != nil:
				return "secrets (via projected volumes)"
			case s.ServiceAccountToken != nil:
				return "serviceaccounts (via projected volumes)"
			case s.ClusterTrustBundle != nil:
				return "clustertrustbundles"
			case s.PodCertificate != nil:
				return "podcertificates"
			}
		}
	}
	return ""
}
