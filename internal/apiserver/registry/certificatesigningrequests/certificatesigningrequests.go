// Package certificatesigningrequests is the registry entry for
// certificates.k8s.io/v1 certificatesigningrequests and their status and
// approval subresources, as upstream's strategies: the requestor is the
// user who creates the request, a request's spec never changes, /approval
// changes only the conditions and /status anything but the Approved and
// Denied conditions. Signing and the approval admission checks (who may
// approve or sign for a signer) are not done here.
package certificatesigningrequests

import (
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/authz"
	"orch/internal/apiserver/registry"
)

// Resource returns the certificatesigningrequests entry. Validation runs
// once per write, with the rules of the (sub)resource written through.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:             certificatesv1.SchemeGroupVersion,
		Resource:                 "certificatesigningrequests",
		Kind:                     "CertificateSigningRequest",
		SingularName:             "certificatesigningrequest",
		ShortNames:               []string{"csr"},
		New:                      func() runtime.Object { return &certificatesv1.CertificateSigningRequest{} },
		NewList:                  func() runtime.Object { return &certificatesv1.CertificateSigningRequestList{} },
		HasStatus:                true,
		PrepareForCreate:         prepareForCreate,
		PrepareForCreateWithUser: setRequestor,
		PrepareForUpdate: func(obj, old runtime.Object) {
			obj.(*certificatesv1.CertificateSigningRequest).Spec = old.(*certificatesv1.CertificateSigningRequest).Spec
		},
		ValidateCreate: func(obj runtime.Object) field.ErrorList {
			return validateCreate(obj.(*certificatesv1.CertificateSigningRequest))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			csr, oldCSR := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
			return validateUpdate(csr, oldCSR, rulesFor(csr, oldCSR))
		},
		Subresources: map[string]registry.Subresource{
			"status":   {PrepareForUpdate: prepareStatus, ValidateUpdate: validateStatus},
			"approval": {PrepareForUpdate: prepareApproval, ValidateUpdate: validateApproval},
		},
		NameValidation: registry.NamePathSegment,
		Columns:        columns,
		Row:            row,
		SelectableFields: func(obj runtime.Object) fields.Set {
			return fields.Set{"spec.signerName": obj.(*certificatesv1.CertificateSigningRequest).Spec.SignerName}
		},
	}
}

// prepareForCreate drops the requestor a client sent (setRequestor sets
// the real one) and any status: nobody creates an approved request. As
// upstream's, a request has no generation.
func prepareForCreate(obj runtime.Object) {
	csr := obj.(*certificatesv1.CertificateSigningRequest)
	csr.Generation = 0
	csr.Spec.Username, csr.Spec.UID, csr.Spec.Groups, csr.Spec.Extra = "", "", nil, nil
	csr.Status = certificatesv1.CertificateSigningRequestStatus{}
}

// setRequestor records user as the requestor.
func setRequestor(obj runtime.Object, user authz.User) {
	csr := obj.(*certificatesv1.CertificateSigningRequest)
	csr.Spec.Username, csr.Spec.UID, csr.Spec.Groups = user.Name, user.UID, user.Groups
	csr.Spec.Extra = nil
	if len(user.Extra) > 0 {
		csr.Spec.Extra = make(map[string]certificatesv1.ExtraValue, len(user.Extra))
		for k, v := range user.Extra {
			csr.Spec.Extra[k] = v
		}
	}
}

var metaDocs = metav1.ObjectMeta{}.SwaggerDoc()

// columns are upstream's table for certificate signing requests.
var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: metaDocs["name"]},
	{Name: "Age", Type: "string", Description: metaDocs["creationTimestamp"]},
	{Name: "SignerName", Type: "string", Description: certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["signerName"]},
	{Name: "Requestor", Type: "string", Description: certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["request"]},
	{Name: "RequestedDuration", Type: "string", Description: certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["expirationSeconds"]},
	{Name: "Condition", Type: "string", Description: certificatesv1.CertificateSigningRequestStatus{}.SwaggerDoc()["conditions"]},
}

// row gives the signer, the requestor, the requested duration ("<none>"
// without one) and the condition as kubectl shows it.
func row(obj runtime.Object, now time.Time) []interface{} {
	csr := obj.(*certificatesv1.CertificateSigningRequest)
	signer := csr.Spec.SignerName
	if signer == "" {
		signer = "<none>"
	}
	requested := "<none>"
	if s := csr.Spec.ExpirationSeconds; s != nil {
		requested = duration.HumanDuration(time.Duration(*s) * time.Second)
	}
	return []interface{}{csr.Name, registry.Age(csr.CreationTimestamp, now), signer, csr.Spec.Username, requested, condition(csr)}
}

// condition is "Denied", "Approved" or "Pending", then ",Failed" when the
// request failed and ",Issued" when it has a certificate.
func condition(csr *certificatesv1.CertificateSigningRequest) string {
	state := "Pending"
	switch {
	case len(conditionsOf(csr, certificatesv1.CertificateDenied)) > 0:
		state = "Denied"
	case len(conditionsOf(csr, certificatesv1.CertificateApproved)) > 0:
		state = "Approved"
	}
	if len(conditionsOf(csr, certificatesv1.CertificateFailed)) > 0 {
		state += ",Failed"
	}
	if len(csr.Status.Certificate) > 0 {
		state += ",Issued"
	}
	return state
}
