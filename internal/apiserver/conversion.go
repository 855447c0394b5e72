package apiserver

import (
	"context"
	"fmt"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// conversionTimeout is how long a conversion webhook may take (upstream's).
const conversionTimeout = 30 * time.Second

// converter changes a custom resource's version in place.
type converter func(u *unstructured.Unstructured, to schema.GroupVersion) error

// webhookConverter is crd's conversion webhook as a converter, as
// upstream's: one ConversionReview per object in the newest review version
// the webhook takes; the answer must carry the request's uid and one
// object of the desired apiVersion and the same kind; of its metadata only
// labels and annotations are taken.
func (s *Server) webhookConverter(crd *apiextensionsv1.CustomResourceDefinition) converter {
	conv := crd.Spec.Conversion
	if conv == nil || conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
		return func(u *unstructured.Unstructured, to schema.GroupVersion) error {
			return fmt.Errorf("the CustomResourceDefinition %s has no conversion webhook configured", crd.Name)
		}
	}
	cc := conv.Webhook.ClientConfig
	target := webhookTarget{CABundle: cc.CABundle}
	if cc.URL != nil {
		target.URL = *cc.URL
	}
	if svc := cc.Service; svc != nil {
		target.Namespace, target.Service = svc.Namespace, svc.Name
		if svc.Path != nil {
			target.Path = *svc.Path
		}
		if svc.Port != nil {
			target.Port = *svc.Port
		}
	}
	reviewVersion := "v1"
	if !slices.Contains(conv.Webhook.ConversionReviewVersions, "v1") {
		reviewVersion = "v1beta1" // same shape; the only other version
	}
	return func(u *unstructured.Unstructured, to schema.GroupVersion) error {
		raw, err := u.MarshalJSON()
		if err != nil {
			return err
		}
		uid := uuid.NewUUID()
		review := &apiextensionsv1.ConversionReview{Request: &apiextensionsv1.ConversionRequest{
			UID: uid, DesiredAPIVersion: to.String(), Objects: []runtime.RawExtension{{Raw: raw}}}}
		review.APIVersion, review.Kind = apiextensionsv1.GroupName+"/"+reviewVersion, "ConversionReview"
		answer := &apiextensionsv1.ConversionReview{}
		if err := s.callWebhook(context.Background(), target, conversionTimeout, review, answer); err != nil {
			return fmt.Errorf("conversion webhook for %s failed: %w", u.GroupVersionKind().GroupKind(), err)
		}
		converted, err := checkConversion(answer.Response, uid, u, to)
		if err != nil {
			return fmt.Errorf("conversion webhook for %s returned an invalid answer: %w", u.GroupVersionKind().GroupKind(), err)
		}
		u.Object = converted.Object
		return nil
	}
}

// checkConversion checks a webhook's answer for the conversion of u to
// gv and returns the converted object with u's metadata but the answer's
// labels and annotations.
func checkConversion(resp *apiextensionsv1.ConversionResponse, uid types.UID, u *unstructured.Unstructured, to schema.GroupVersion) (*unstructured.Unstructured, error) {
	switch {
	case resp == nil:
		return nil, fmt.Errorf("no response")
	case resp.UID != uid:
		return nil, fmt.Errorf("the response uid %q is not the request's %q", resp.UID, uid)
	case resp.Result.Status != "Success":
		return nil, fmt.Errorf("%s", resp.Result.Message)
	case len(resp.ConvertedObjects) != 1:
		return nil, fmt.Errorf("%d objects for 1", len(resp.ConvertedObjects))
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(resp.ConvertedObjects[0].Raw); err != nil {
		return nil, err
	}
	if out.GetAPIVersion() != to.String() || out.GetKind() != u.GetKind() {
		return nil, fmt.Errorf("the object is a %s %s, not a %s %s", out.GetAPIVersion(), out.GetKind(), to, u.GetKind())
	}
	labels, annotations := out.GetLabels(), out.GetAnnotations()
	if m, ok := u.Object["metadata"].(map[string]any); ok {
		out.Object["metadata"] = runtime.DeepCopyJSON(m)
	} else {
		delete(out.Object, "metadata")
	}
	out.SetLabels(labels)
	out.SetAnnotations(annotations)
	return out, nil
}
