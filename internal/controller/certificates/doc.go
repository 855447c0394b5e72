// Package certificates runs the certificates.k8s.io/v1
// CertificateSigningRequest controllers of upstream's kube-controller-manager
// as one component (Controller, built by New):
//
//   - the signer (upstream's csrsigning) issues certificates from the
//     cluster CA for approved requests to kubernetes.io/kube-apiserver-client,
//     kubernetes.io/kube-apiserver-client-kubelet and
//     kubernetes.io/kubelet-serving. A request that breaks its signer's rules
//     (ValidateRequest) gets a Failed condition, reason
//     SignerValidationFailure, instead of a certificate. The lifetime is
//     spec.expirationSeconds (at least 10 minutes) capped by
//     Options.MaxDuration and by the CA's own expiry. Other signers,
//     kubernetes.io/legacy-unknown included, are left alone;
//   - the approver (upstream's csrapproving) approves, through the
//     /approval subresource, kube-apiserver-client-kubelet requests for node
//     client certificates whose requester a SubjectAccessReview allows to
//     create certificatesigningrequests/selfnodeclient (a node renewing its
//     own certificate) or certificatesigningrequests/nodeclient;
//   - the cleaner (upstream's csrcleaner) deletes, once an hour, requests
//     that are done with (CleanupReason says which and why).
//
// The decisions (ValidateRequest, the recognizers of the approver,
// CleanupReason, the certificate template) are pure functions apart from
// the I/O; time comes from controller.Context's clock.
//
// Like upstream, the controllers record no events: what they decide is in
// the request's conditions.
package certificates
