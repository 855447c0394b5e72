package server

import (
	"crypto/tls"
	"time"

	"orch/internal/apiserver"
	"orch/internal/pki"
	"orch/internal/rbacpolicy"
)

// kubeletClientConfig issues the apiserver's kubelet client certificate
// (a new one at every start, valid a year) and trusts kubelets whose
// serving certificates the cluster CA signed. Its user is
// system:kube-apiserver-kubelet-client, in no group: the bootstrap policy
// binds it to system:kubelet-api-admin, and kubelets ask the apiserver
// whether it may (SubjectAccessReview).
func kubeletClientConfig(bundle *pki.Bundle) (*apiserver.KubeletClientConfig, error) {
	certPEM, keyPEM, err := bundle.IssueClientCert(rbacpolicy.KubeletClientUser, nil, 365*24*time.Hour)
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	return &apiserver.KubeletClientConfig{TLS: &tls.Config{
		RootCAs: bundle.CAPool(), Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12,
	}}, nil
}
