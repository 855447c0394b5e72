package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// httpClient sends raw requests to the apiserver.
type httpClient struct{ c *http.Client }

// response is a whole HTTP response.
type response struct {
	Code   int
	Header http.Header
	Body   []byte
}

func (r response) describe() string {
	return fmt.Sprintf("HTTP %d %q", r.Code, truncate(string(r.Body), 300))
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// adminClient speaks HTTPS with the admin client certificate, key and CA
// taken from the kubeconfig the server wrote.
func (s *Server) adminClient() (*httpClient, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
	if err != nil {
		return nil, fmt.Errorf("admin certificate in %s: %w", s.Kubeconfig, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cfg.CAData) {
		return nil, fmt.Errorf("no CA certificate in %s", s.Kubeconfig)
	}
	return newHTTPClient(&tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}), nil
}

// anonymousClient trusts the cluster CA but presents no certificate.
func (s *Server) anonymousClient() (*httpClient, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cfg.CAData) {
		return nil, fmt.Errorf("no CA certificate in %s", s.Kubeconfig)
	}
	return newHTTPClient(&tls.Config{RootCAs: pool}), nil
}

func newHTTPClient(tc *tls.Config) *httpClient {
	return &httpClient{c: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}}
}

// Admin and Anonymous are adminClient and anonymousClient for tests.
func (s *Server) Admin(t *testing.T) *httpClient {
	t.Helper()
	c, err := s.adminClient()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (s *Server) Anonymous(t *testing.T) *httpClient {
	t.Helper()
	c, err := s.anonymousClient()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// RestConfig is the admin kubeconfig as a client-go config.
func (s *Server) RestConfig(t *testing.T) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func (c *httpClient) get(url string) (response, error) {
	return c.do("GET", url, nil, nil)
}

// do sends one request; header holds pairs of name and value.
func (c *httpClient) do(method, url string, body []byte, header map[string]string) (response, error) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return response{}, err
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.c.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return response{Code: resp.StatusCode, Header: resp.Header, Body: data}, err
}

// Do is do for tests: a transport error fails the test.
func (c *httpClient) Do(t *testing.T, method, url string, body []byte, header map[string]string) response {
	t.Helper()
	r, err := c.do(method, url, body, header)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return r
}

// expectStatus checks that r has the HTTP code and that its body is a JSON
// metav1.Status with that code and reason; it returns the Status.
func expectStatus(t *testing.T, what string, r response, code int, reason metav1.StatusReason) metav1.Status {
	t.Helper()
	var st metav1.Status
	if r.Code != code {
		t.Errorf("%s: got %s, want HTTP %d %s", what, r.describe(), code, reason)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s: Content-Type %q, want application/json", what, ct)
	}
	if err := json.Unmarshal(r.Body, &st); err != nil {
		t.Errorf("%s: body is not a metav1.Status: %v: %q", what, err, truncate(string(r.Body), 300))
		return st
	}
	if st.Kind != "Status" || st.APIVersion != "v1" || st.Status != metav1.StatusFailure {
		t.Errorf("%s: Status kind=%q apiVersion=%q status=%q, want Status v1 Failure", what, st.Kind, st.APIVersion, st.Status)
	}
	if st.Code != int32(code) || st.Reason != reason {
		t.Errorf("%s: Status code=%d reason=%q message=%q, want %d %q", what, st.Code, st.Reason, st.Message, code, reason)
	}
	return st
}
