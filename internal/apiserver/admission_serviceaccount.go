package apiserver

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/satoken"
)

// Upstream's names for the service account token volume.
const (
	defaultServiceAccountName = "default"
	// tokenVolumePrefix starts the name of the projected volume admission adds.
	tokenVolumePrefix = "kube-api-access-"
	// tokenMountPath is where containers find token, ca.crt and namespace.
	tokenMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// rootCAConfigMap is the ConfigMap with the cluster CA in every namespace.
	rootCAConfigMap = "kube-root-ca.crt"
	// defaultAccountAttempts is how often a missing "default" service account
	// is looked up again (it is created right after its namespace).
	defaultAccountAttempts = 10
)

// admitServiceAccount is upstream's ServiceAccount admission for a new pod
// (plugin/pkg/admission/serviceaccount): the service account defaults to
// "default" and must exist (403 otherwise); unless automounting is turned
// off on the pod or the account, every container and init container that
// does not mount something at tokenMountPath gets the kube-api-access-*
// projected volume there (ephemeral containers are added later, and get
// none, as upstream); the account's imagePullSecrets are copied to a pod
// that has none. Mirror pods get nothing and may not use service accounts
// or secrets.
func (s *Server) admitServiceAccount(ctx context.Context, pod *corev1.Pod) error {
	if s.cfg.DisableServiceAccountAdmission {
		return nil
	}
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return validateMirrorPod(pod)
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = defaultServiceAccountName
	}
	pod.Spec.DeprecatedServiceAccount = pod.Spec.ServiceAccountName
	sa, err := s.lookUpServiceAccount(ctx, pod.Namespace, pod.Spec.ServiceAccountName)
	if err != nil {
		return apierrors.NewForbidden(corev1.Resource("pods"), pod.Name,
			fmt.Errorf("error looking up service account %s/%s: %w", pod.Namespace, pod.Spec.ServiceAccountName, err))
	}
	if automount(sa, pod) {
		mountServiceAccountToken(pod)
	}
	if len(pod.Spec.ImagePullSecrets) == 0 && len(sa.ImagePullSecrets) > 0 {
		pod.Spec.ImagePullSecrets = make([]corev1.LocalObjectReference, len(sa.ImagePullSecrets))
		for i, ref := range sa.ImagePullSecrets {
			pod.Spec.ImagePullSecrets[i].Name = ref.Name
		}
	}
	return nil
}

// lookUpServiceAccount reads the account from storage, trying a missing
// "default" account a few times over a second or two as upstream does.
func (s *Server) lookUpServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	rs := s.resources[corev1.SchemeGroupVersion.WithResource("serviceaccounts")]
	if rs == nil {
		return nil, errors.New("serviceaccounts are not served")
	}
	attempts := 1
	if name == defaultServiceAccountName {
		attempts = defaultAccountAttempts
	}
	pause := time.Duration(100+rand.IntN(100)) * time.Millisecond
	for i := 0; i < attempts; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(pause):
			}
		}
		obj, err := rs.get(ctx, namespace, name)
		if err == nil {
			return obj.(*corev1.ServiceAccount), nil
		}
		if !isNotFound(err) {
			return nil, err
		}
	}
	return nil, apierrors.NewNotFound(corev1.Resource("serviceaccount"), name)
}

func automount(sa *corev1.ServiceAccount, pod *corev1.Pod) bool {
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken
	}
	if sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

// mountServiceAccountToken adds the token volume (reusing a kube-api-access-*
// volume the pod already has) and its mount.
func mountServiceAccountToken(pod *corev1.Pod) {
	volumeName, hasVolume := "", false
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, tokenVolumePrefix) {
			volumeName, hasVolume = v.Name, true
			break
		}
	}
	if volumeName == "" {
		volumeName = generateName(tokenVolumePrefix)
	}
	mount := corev1.VolumeMount{Name: volumeName, ReadOnly: true, MountPath: tokenMountPath}
	needed := false
	add := func(containers []corev1.Container) {
		for i := range containers {
			mounted := false
			for _, m := range containers[i].VolumeMounts {
				mounted = mounted || m.MountPath == tokenMountPath
			}
			if !mounted {
				containers[i].VolumeMounts = append(containers[i].VolumeMounts, mount)
				needed = true
			}
		}
	}
	add(pod.Spec.InitContainers)
	add(pod.Spec.Containers)
	if !hasVolume && needed {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: volumeName,
			VolumeSource: corev1.VolumeSource{Projected: tokenVolumeSource()}})
	}
}

// tokenVolumeSource is the projected volume of a service account token, the
// cluster CA and the namespace, as upstream builds it.
func tokenVolumeSource() *corev1.ProjectedVolumeSource {
	return &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](corev1.ProjectedVolumeSourceDefaultMode),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token",
				ExpirationSeconds: ptr.To[int64](satoken.WarnOnlyBoundTokenExpirationSeconds)}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: rootCAConfigMap},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}
}

// validateMirrorPod refuses a mirror pod that names a service account or a
// secret or projects a token, with upstream's messages.
func validateMirrorPod(pod *corev1.Pod) error {
	forbid := func(msg string) error {
		return apierrors.NewForbidden(corev1.Resource("pods"), pod.Name, errors.New(msg))
	}
	if pod.Spec.ServiceAccountName != "" {
		return forbid("a mirror pod may not reference service accounts")
	}
	if podReferencesSecrets(pod) {
		return forbid("a mirror pod may not reference secrets")
	}
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.ServiceAccountToken != nil {
				return forbid("a mirror pod may not use ServiceAccountToken volume projections")
			}
		}
	}
	return nil
}

// podReferencesSecrets reports whether the pod names any secret: pull
// secrets, env and envFrom of every container, and secret-bearing volumes.
func podReferencesSecrets(pod *corev1.Pod) bool {
	if len(pod.Spec.ImagePullSecrets) > 0 {
		return true
	}
	envUsesSecret := func(env []corev1.EnvVar, from []corev1.EnvFromSource) bool {
		for _, e := range env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				return true
			}
		}
		for _, f := range from {
			if f.SecretRef != nil {
				return true
			}
		}
		return false
	}
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if envUsesSecret(c.Env, c.EnvFrom) {
			return true
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if envUsesSecret(c.Env, c.EnvFrom) {
			return true
		}
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.Secret != nil, v.AzureFile != nil,
			v.CephFS != nil && v.CephFS.SecretRef != nil,
			v.Cinder != nil && v.Cinder.SecretRef != nil,
			v.FlexVolume != nil && v.FlexVolume.SecretRef != nil,
			v.RBD != nil && v.RBD.SecretRef != nil,
			v.ScaleIO != nil && v.ScaleIO.SecretRef != nil,
			v.ISCSI != nil && v.ISCSI.SecretRef != nil,
			v.StorageOS != nil && v.StorageOS.SecretRef != nil,
			v.CSI != nil && v.CSI.NodePublishSecretRef != nil:
			return true
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					return true
				}
			}
		}
	}
	return false
}
