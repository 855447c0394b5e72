package noderestriction

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/component-helpers/storage/ephemeral"

	"orch/internal/apiserver/authz"
)

// TokenAudienceVerb is the verb a node needs on an audience (as the
// resource, in the core group) to ask for tokens for an audience its pod
// does not use.
const TokenAudienceVerb = "request-serviceaccounts-token-audience"

// admitToken lets a node ask only for service account tokens bound to a
// pod on itself (so the token dies with the pod), for one audience that
// the pod uses — a projected token volume, or a CSI driver of its volumes
// that asks for tokens — unless it may ask for that audience anyway.
func admitToken(ctx context.Context, node string, req Request, l Lookup) error {
	if req.Operation != Create || req.Subresource != "token" {
		return nil
	}
	tr, ok := req.Object.(*authenticationv1.TokenRequest)
	if !ok {
		return forbidden(req, fmt.Errorf("unexpected type %T", req.Object))
	}
	ref := tr.Spec.BoundObjectRef
	if ref == nil || ref.APIVersion != "v1" || ref.Kind != "Pod" || ref.Name == "" {
		return forbidden(req, fmt.Errorf("node requested token not bound to a pod"))
	}
	if ref.UID == "" {
		return forbidden(req, fmt.Errorf("node requested token with a pod binding without a uid"))
	}
	pod, err := storedPod(req, l, req.Namespace, ref.Name)
	if err != nil {
		return err
	}
	if ref.UID != pod.UID {
		return forbidden(req, fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	if pod.Spec.NodeName != node {
		return forbidden(req, fmt.Errorf("node requested token bound to a pod scheduled on a different node"))
	}
	return admitAudience(ctx, req, tr, pod, l)
}

// admitAudience is ServiceAccountNodeAudienceRestriction (on since 1.33).
func admitAudience(ctx context.Context, req Request, tr *authenticationv1.TokenRequest, pod *corev1.Pod, l Lookup) error {
	audience := ""
	switch len(tr.Spec.Audiences) {
	case 0:
	case 1:
		audience = tr.Spec.Audiences[0]
	default:
		return forbidden(req, fmt.Errorf("node may only request 0 or 1 audiences"))
	}
	used, err := podUsesAudience(pod, audience, l)
	if err != nil {
		return forbidden(req, fmt.Errorf("error validating audience %q: %w", audience, err))
	}
	if used {
		return nil
	}
	d := authz.NoOpinion
	if l.Authorizer != nil {
		d, _, err = l.Authorizer.Authorize(ctx, authz.Attributes{User: req.User, Verb: TokenAudienceVerb, ResourceRequest: true,
			Namespace: req.Namespace, APIVersion: "v1", Resource: audience, Name: req.Name})
		if err != nil {
			return forbidden(req, fmt.Errorf("error validating audience %q: %w", audience, err))
		}
	}
	if d != authz.Allow {
		return forbidden(req, fmt.Errorf("audience %q not found in pod spec volume, %s is not authorized to request tokens for this audience", audience, req.User.Name))
	}
	return nil
}

// podUsesAudience reports whether a volume of pod uses audience: a
// projected service account token for it, or a CSI driver (inline, or
// behind a claim's volume) that asks for tokens for it. Lookup errors
// count only when no volume uses the audience.
func podUsesAudience(pod *corev1.Pod, audience string, l Lookup) (bool, error) {
	var errs []error
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.ServiceAccountToken != nil && s.ServiceAccountToken.Audience == audience {
					return true, nil
				}
			}
		}
		driver, err := csiDriverOf(pod, v, l)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if driver == "" {
			continue
		}
		var d *storagev1.CSIDriver
		err = apierrors.NewNotFound(storagev1.Resource("csidrivers"), driver)
		if l.CSIDriver != nil {
			d, err = l.CSIDriver(driver)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, tr := range d.Spec.TokenRequests {
			if tr.Audience == audience {
				return true, nil
			}
		}
	}
	return false, utilerrors.NewAggregate(errs)
}

// csiDriverOf is the CSI driver behind volume v: its own, or that of the
// persistent volume bound to its claim (an ephemeral volume's claim is
// POD-VOLUME). In-tree volumes have none (orch does not translate them to
// CSI drivers).
func csiDriverOf(pod *corev1.Pod, v *corev1.Volume, l Lookup) (string, error) {
	var claimName string
	switch {
	case v.CSI != nil:
		return v.CSI.Driver, nil
	case v.PersistentVolumeClaim != nil:
		claimName = v.PersistentVolumeClaim.ClaimName
	case v.Ephemeral != nil:
		claimName = ephemeral.VolumeClaimName(pod, v)
	default:
		return "", nil
	}
	var claim *corev1.PersistentVolumeClaim
	var err error = apierrors.NewNotFound(corev1.Resource("persistentvolumeclaims"), claimName)
	if l.Claim != nil {
		claim, err = l.Claim(pod.Namespace, claimName)
	}
	if err != nil {
		return "", err
	}
	if claim.Spec.VolumeName == "" {
		return "", nil
	}
	var pv *corev1.PersistentVolume
	err = apierrors.NewNotFound(corev1.Resource("persistentvolumes"), claim.Spec.VolumeName)
	if l.Volume != nil {
		pv, err = l.Volume(claim.Spec.VolumeName)
	}
	if err != nil {
		return "", err
	}
	if pv.Spec.CSI != nil {
		return pv.Spec.CSI.Driver, nil
	}
	return "", nil
}
