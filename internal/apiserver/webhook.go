package apiserver

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// webhookTarget is where a webhook is served: a URL, or a Service's port
// and path, with the CA bundle its serving certificate must chain to (the
// host's roots when empty). Conversion and admission webhooks share it.
type webhookTarget struct {
	URL       string
	Namespace string
	Service   string
	Port      int32
	Path      string
	CABundle  []byte
}

// maxWebhookResponse bounds what a webhook may answer (upstream: 30 MiB).
const maxWebhookResponse = 30 << 20

// callWebhook POSTs request as JSON to target and decodes the answer into
// response. A Service is reached at one of its ready endpoints, as
// services/proxy reaches it, and its certificate must name
// <service>.<namespace>.svc, as upstream's webhooks require.
func (s *Server) callWebhook(ctx context.Context, target webhookTarget, timeout time.Duration, request, response any) error {
	body, err := json.Marshal(request)
	if err != nil {
		return err
	}
	address, serverName, err := s.webhookAddress(ctx, target)
	if err != nil {
		return err
	}
	roots, err := webhookRoots(target.CABundle)
	if err != nil {
		return err
	}
	dialer := &net.Dialer{Timeout: timeout}
	transport := &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, address.Host)
		},
		ForceAttemptHTTP2: true,
	}
	defer transport.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, address.String(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := (&http.Client{Transport: transport}).Do(req)
	if err != nil {
		return fmt.Errorf("calling webhook %s: %w", address.Redacted(), err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxWebhookResponse))
	if err != nil {
		return fmt.Errorf("reading the answer of webhook %s: %w", address.Redacted(), err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("webhook %s answered %s: %.200s", address.Redacted(), resp.Status, data)
	}
	if err := json.Unmarshal(data, response); err != nil {
		return fmt.Errorf("the answer of webhook %s is not valid: %w", address.Redacted(), err)
	}
	return nil
}

// webhookAddress is the URL to post to (its host is where to dial) and the
// name the serving certificate must have.
func (s *Server) webhookAddress(ctx context.Context, target webhookTarget) (*url.URL, string, error) {
	if target.URL != "" {
		u, err := url.Parse(target.URL)
		if err != nil || u.Scheme != "https" {
			return nil, "", fmt.Errorf("webhook URL %q must be https", target.URL)
		}
		return u, u.Hostname(), nil
	}
	services := s.resources[corev1.SchemeGroupVersion.WithResource("services")]
	if services == nil {
		return nil, "", fmt.Errorf("services are not served")
	}
	port := target.Port
	if port == 0 {
		port = 443
	}
	hostPort, err := s.serviceEndpoint(ctx, services, target.Namespace, target.Service, strconv.Itoa(int(port)))
	if err != nil {
		return nil, "", fmt.Errorf("service %s/%s: %w", target.Namespace, target.Service, err)
	}
	return &url.URL{Scheme: "https", Host: hostPort, Path: target.Path}, target.Service + "." + target.Namespace + ".svc", nil
}

// webhookRoots is the pool a webhook's certificate is checked against.
func webhookRoots(caBundle []byte) (*x509.CertPool, error) {
	if len(caBundle) == 0 {
		return x509.SystemCertPool()
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caBundle) {
		return nil, fmt.Errorf("the webhook's caBundle holds no PEM certificate")
	}
	return pool, nil
}
