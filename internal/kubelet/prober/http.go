package prober

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"orch/internal/version"
)

// userAgent is the User-Agent of HTTP and gRPC probes: kube-probe/1.37.
var userAgent = func() string {
	v := version.Info()
	return "kube-probe/" + v.Major + "." + v.Minor
}()

// httpProber runs httpGet probes. Its transport keeps no connections
// alive, ignores proxies, asks for no compression and does not verify
// HTTPS certificates, as upstream's.
type httpProber struct {
	transport *http.Transport
}

func newHTTPProber() *httpProber {
	return &httpProber{transport: &http.Transport{
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true},
		ForceAttemptHTTP2:   true,
		DisableKeepAlives:   true,
		DisableCompression:  true,
		Proxy:               nil,
		DialContext:         dialer().DialContext,
		TLSHandshakeTimeout: 10 * time.Second,
	}}
}

// newHTTPRequest builds the GET request of an httpGet probe: scheme
// (default http), host (default podIP), port by number or name, path, and
// headers, with User-Agent kube-probe/1.37 and Accept */* unless set (an
// empty Accept drops the header) and a Host header as the request's host.
func newHTTPRequest(ctx context.Context, a *corev1.HTTPGetAction, c *corev1.Container, podIP string) (*http.Request, error) {
	scheme := strings.ToLower(string(a.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	host := a.Host
	if host == "" {
		host = podIP
	}
	port, err := ResolvePort(a.Port, c)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(a.Path)
	if err != nil {
		u = &url.URL{Path: a.Path}
	}
	u.Scheme, u.Host = scheme, net.JoinHostPort(host, strconv.Itoa(port))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	headers := http.Header{}
	for _, h := range a.HTTPHeaders {
		headers.Add(h.Name, h.Value)
	}
	if _, ok := headers["User-Agent"]; !ok {
		headers.Set("User-Agent", userAgent)
	}
	if _, ok := headers["Accept"]; !ok {
		headers.Set("Accept", "*/*")
	} else if headers.Get("Accept") == "" {
		headers.Del("Accept")
	}
	req.Header = headers
	req.Host = headers.Get("Host")
	return req, nil
}

// probe sends req: a 2xx answer is success, a 3xx one (a redirect to
// another host, which is not followed) a success with a warning, anything
// else a failure.
func (p *httpProber) probe(req *http.Request, timeout time.Duration) (outcome, string, error) {
	client := &http.Client{Timeout: timeout, Transport: p.transport, CheckRedirect: sameHostRedirects}
	res, err := client.Do(req)
	if err != nil {
		return outcomeFailure, err.Error(), nil
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxOutput))
	if err != nil {
		return outcomeFailure, "", err
	}
	body := string(b)
	switch {
	case res.StatusCode >= 200 && res.StatusCode < 300:
		return outcomeSuccess, body, nil
	case res.StatusCode >= 300 && res.StatusCode < 400:
		return outcomeWarning, fmt.Sprintf("Probe terminated redirects, Response body: %v", body), nil
	}
	return outcomeFailure, fmt.Sprintf("HTTP probe failed with statuscode: %d", res.StatusCode), nil
}

// sameHostRedirects follows up to 10 redirects to the same host; a
// redirect to another host ends the request with the redirect response.
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}
