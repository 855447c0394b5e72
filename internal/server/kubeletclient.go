package server

import (
	"crypto/tls"
	"time"

	"orch/internal/apiserver"
	"orch/internal/pki"
)

// The identity the apiserver presents to kubelets, as kubeadm names its
// apiserver-kubelet-client certificate.
const (
	kubeletClientUser  = "system:kube-apiserver-kubelet-client"
	kubeletClientGroup = "system:masters"
)

// kubeletClientConfig issues the apiserver's kubelet client certificate
// (a new one at every start, valid a year) and trusts kubelets whose
// serving certificates the cluster CA signed.
func kubeletClientConfig(bundle *pki.Bundle) (*apiserver.KubeletClientConfig, error) {
	certPEM, keyPEM, err := bundle.IssueClientCert(kubeletClientUser, []string{kubeletClientGroup}, 365*24*time.Hour)
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
