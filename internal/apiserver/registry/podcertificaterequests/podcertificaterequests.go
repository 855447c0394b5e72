// Package podcertificaterequests is the registry entry for
// certificates.k8s.io/v1 podcertificaterequests and their status
// subresource, with upstream's defaults, validation and table: a request's
// spec never changes, and its status only on the way to being Issued,
// Denied or Failed, after which it is final. Upstream's check that a
// status writer may "sign" for the request's signer is not done here.
package podcertificaterequests

import (
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
)

// defaultMaxExpirationSeconds is a day, upstream's default lifetime.
const defaultMaxExpirationSeconds int32 = 24 * 60 * 60

// Resource returns the podcertificaterequests entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion: certificatesv1.SchemeGroupVersion,
		Resource:     "podcertificaterequests",
		Kind:         "PodCertificateRequest",
		SingularName: "podcertificaterequest",
		Namespaced:   true,
		New:          func() runtime.Object { return &certificatesv1.PodCertificateRequest{} },
		NewList:      func() runtime.Object { return &certificatesv1.PodCertificateRequestList{} },
		HasStatus:    true,
		Default: func(obj runtime.Object) {
			spec := &obj.(*certificatesv1.PodCertificateRequest).Spec
			if spec.MaxExpirationSeconds == nil {
				seconds := defaultMaxExpirationSeconds
				spec.MaxExpirationSeconds = &seconds
			}
		},
		PrepareForCreate: prepareForCreate,
		ValidateCreate: func(obj runtime.Object) field.ErrorList {
			return validateCreate(obj.(*certificatesv1.PodCertificateRequest))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			spec, oldSpec := obj.(*certificatesv1.PodCertificateRequest).Spec, old.(*certificatesv1.PodCertificateRequest).Spec
			return apivalidation.ValidateImmutableField(spec, oldSpec, field.NewPath("spec"))
		},
		ValidateStatusUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validateStatusUpdate(obj.(*certificatesv1.PodCertificateRequest), old.(*certificatesv1.PodCertificateRequest), time.Now())
		},
		Columns: columns,
		Row:     row,
		SelectableFields: func(obj runtime.Object) fields.Set {
			spec := obj.(*certificatesv1.PodCertificateRequest).Spec
			return fields.Set{"spec.signerName": spec.SignerName, "spec.podName": spec.PodName, "spec.nodeName": string(spec.NodeName)}
		},
	}
}

// prepareForCreate starts a request with an empty status; as upstream's,
// it has no generation.
func prepareForCreate(obj runtime.Object) {
	pcr := obj.(*certificatesv1.PodCertificateRequest)
	pcr.Generation = 0
	pcr.Status = certificatesv1.PodCertificateRequestStatus{}
}

var specDocs = certificatesv1.PodCertificateRequestSpec{}.SwaggerDoc()

// columns are upstream's table for pod certificate requests.
var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
	{Name: "PodName", Type: "string", Description: specDocs["podName"]},
	{Name: "ServiceAccountName", Type: "string", Description: specDocs["serviceAccountName"]},
	{Name: "NodeName", Type: "string", Description: specDocs["nodeName"]},
	{Name: "SignerName", Type: "string", Description: specDocs["signerName"]},
	{Name: "State", Type: "string", Description: "Is the request Pending, Issued, Denied, or Failed?"},
	{Name: "UnverifiedUserAnnotations", Type: "string", Description: specDocs["unverifiedUserAnnotations"]},
}

// row gives the pod, service account, node and signer, the state (the
// last of Issued, Denied and Failed among the conditions, else Pending)
// and the user annotations as labels print.
func row(obj runtime.Object, _ time.Time) []interface{} {
	pcr := obj.(*certificatesv1.PodCertificateRequest)
	state := "Pending"
	for _, c := range pcr.Status.Conditions {
		switch c.Type {
		case certificatesv1.PodCertificateRequestConditionTypeIssued, certificatesv1.PodCertificateRequestConditionTypeDenied,
			certificatesv1.PodCertificateRequestConditionTypeFailed:
			state = c.Type
		}
	}
	return []interface{}{pcr.Name, pcr.Spec.PodName, pcr.Spec.ServiceAccountName, string(pcr.Spec.NodeName), pcr.Spec.SignerName,
		state, labels.FormatLabels(pcr.Spec.UnverifiedUserAnnotations)}
}
