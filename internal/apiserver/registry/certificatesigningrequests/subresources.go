package certificatesigningrequests

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// prepareStatus is a write through /status, as upstream's status
// strategy: the spec stays and so do the Approved and Denied conditions
// (validation refuses adding or removing one); metadata may change.
func prepareStatus(obj, old runtime.Object) {
	csr, oldCSR := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
	csr.Spec = oldCSR.Spec
	keepConditions(csr, oldCSR, certificatesv1.CertificateApproved)
	keepConditions(csr, oldCSR, certificatesv1.CertificateDenied)
	stampConditions(csr, oldCSR, metav1.Now())
}

// prepareApproval is a write through /approval, as upstream's approval
// strategy: of the spec and status only the conditions change; metadata
// may change.
func prepareApproval(obj, old runtime.Object) {
	csr, oldCSR := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
	stampConditions(csr, oldCSR, metav1.Now())
	conditions := csr.Status.Conditions
	csr.Spec = oldCSR.Spec
	csr.Status = *oldCSR.Status.DeepCopy()
	csr.Status.Conditions = conditions
}

func validateStatus(obj, old runtime.Object) field.ErrorList {
	csr, oldCSR := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
	r := rulesFor(csr, oldCSR)
	r.setCertificate = true
	return validateUpdate(csr, oldCSR, r)
}

func validateApproval(obj, old runtime.Object) field.ErrorList {
	csr, oldCSR := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
	r := rulesFor(csr, oldCSR)
	r.setApproval = true
	return validateUpdate(csr, oldCSR, r)
}

// keepConditions puts back the stored conditions of type t over those
// written, when as many are written as are stored.
func keepConditions(csr, old *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) {
	stored := conditionsOf(old, t)
	var written []int
	for i, c := range csr.Status.Conditions {
		if c.Type == t {
			written = append(written, i)
		}
	}
	if len(written) != len(stored) {
		return
	}
	for i, at := range written {
		csr.Status.Conditions[at] = stored[i]
	}
}

// stampConditions sets the times a condition was written without: its
// last update is now, its last transition that of a stored condition of
// the same type and status, else now.
func stampConditions(csr, old *certificatesv1.CertificateSigningRequest, now metav1.Time) {
	for i := range csr.Status.Conditions {
		c := &csr.Status.Conditions[i]
		if c.LastUpdateTime.IsZero() {
			c.LastUpdateTime = now
		}
		if !c.LastTransitionTime.IsZero() {
			continue
		}
		c.LastTransitionTime = now
		for _, o := range old.Status.Conditions {
			if o.Type == c.Type && o.Status == c.Status && !o.LastTransitionTime.IsZero() {
				c.LastTransitionTime = o.LastTransitionTime
				break
			}
		}
	}
}
