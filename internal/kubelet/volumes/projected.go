package volumes

import (
	"fmt"
	"maps"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"orch/internal/kubelet/podconfig"
)

// maxTokenTTL is how long a token is used at the most before it is
// refreshed, whatever its expiry (upstream's token manager).
const maxTokenTTL = 24 * time.Hour

func (s *setup) projectedVolume(name string, src *corev1.ProjectedVolumeSource) (podconfig.Volume, error) {
	payload, err := s.projectedPayload(name, src)
	if err != nil {
		return podconfig.Volume{}, err
	}
	return s.atomicVolume(PluginProjected, name, true, payload)
}

// projectedPayload is the files of all sources, a later source's file
// replacing an earlier one's at the same path; errors of all sources are
// aggregated, as upstream.
func (s *setup) projectedPayload(name string, src *corev1.ProjectedVolumeSource) (map[string]fileProjection, error) {
	mode := modeOr(src.DefaultMode)
	out := map[string]fileProjection{}
	var errs []error
	for i, p := range src.Sources {
		var files map[string]fileProjection
		var err error
		switch {
		case p.Secret != nil:
			optional := isTrue(p.Secret.Optional)
			var sec *corev1.Secret
			if sec, err = s.secret(p.Secret.Name, optional); err == nil {
				files, err = secretPayload(sec, p.Secret.Items, mode, optional)
			}
		case p.ConfigMap != nil:
			optional := isTrue(p.ConfigMap.Optional)
			var cm *corev1.ConfigMap
			if cm, err = s.configMap(p.ConfigMap.Name, optional); err == nil {
				files, err = configMapPayload(cm, p.ConfigMap.Items, mode, optional)
			}
		case p.DownwardAPI != nil:
			files, err = s.downwardAPIPayload(p.DownwardAPI.Items, mode)
		case p.ServiceAccountToken != nil:
			var token string
			if token, err = s.token(name, i, p.ServiceAccountToken); err == nil {
				m := mode
				if fsGroup(s.pod) != nil {
					m = 0o600
				}
				files = map[string]fileProjection{p.ServiceAccountToken.Path: {Data: []byte(token), Mode: m}}
			}
		case p.ClusterTrustBundle != nil:
			files, err = s.trustBundlePayload(p.ClusterTrustBundle, mode)
		case p.PodCertificate != nil:
			files, err = s.podCertificatePayload(name, i, p.PodCertificate, mode)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		maps.Copy(out, files)
	}
	return out, utilerrors.NewAggregate(errs)
}

// token is the service account token of source index i of the projected
// volume: the cached one until it is older than 80% of its lifetime or
// 24 hours, then a new one through TokenRequest. A failed refresh keeps
// the cached token while it is valid, as upstream's token manager.
func (s *setup) token(volume string, i int, src *corev1.ServiceAccountTokenProjection) (string, error) {
	var auds []string
	if src.Audience != "" {
		auds = []string{src.Audience}
	}
	sa := s.pod.Spec.ServiceAccountName
	var exp int64
	if src.ExpirationSeconds != nil {
		exp = *src.ExpirationSeconds
	}
	key := fmt.Sprintf("%s/%d/%s/%q/%d", volume, i, sa, strings.Join(auds, ","), exp)
	now := s.m.Clock.Now()
	cached, ok := s.ps.tokens[key]
	if ok && !tokenNeedsRefresh(cached, now) {
		return cached.Status.Token, nil
	}
	tr, err := s.m.client.CoreV1().ServiceAccounts(s.pod.Namespace).CreateToken(s.ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			Audiences:         auds,
			ExpirationSeconds: src.ExpirationSeconds,
			BoundObjectRef: &authenticationv1.BoundObjectReference{
				Kind:       "Pod",
				APIVersion: "v1",
				Name:       s.pod.Name,
				UID:        s.pod.UID,
			},
		},
	}, metav1.CreateOptions{})
	if err == nil && tr.Status.Token == "" {
		err = fmt.Errorf("the TokenRequest of service account %q returned no token", sa)
	}
	if err != nil {
		switch {
		case !ok:
			return "", fmt.Errorf("failed to fetch token: %w", err)
		case now.After(cached.Status.ExpirationTimestamp.Time):
			return "", fmt.Errorf("token of service account %q expired and refresh failed: %w", sa, err)
		}
		s.log.Warn("cannot refresh service account token, using the cached one", "volume", volume, "err", err)
		return cached.Status.Token, nil
	}
	if tr.Spec.ExpirationSeconds == nil {
		tr.Spec.ExpirationSeconds = src.ExpirationSeconds
	}
	s.ps.tokens[key] = tr
	return tr.Status.Token, nil
}

// tokenNeedsRefresh: the token is older than 24 hours or than 80% of its
// lifetime (without the jitter upstream adds).
func tokenNeedsRefresh(tr *authenticationv1.TokenRequest, now time.Time) bool {
	if tr.Spec.ExpirationSeconds == nil {
		return now.After(tr.Status.ExpirationTimestamp.Time)
	}
	ttl := time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
	exp := tr.Status.ExpirationTimestamp.Time
	issued := exp.Add(-ttl)
	return now.After(issued.Add(maxTokenTTL)) || now.After(exp.Add(-ttl/5))
}
