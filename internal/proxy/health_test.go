package proxy

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestHealthCheckNodePort: the health check port of a Local LoadBalancer
// Service answers 503 without a ready local endpoint and 200 with one,
// with upstream's JSON body; 503 too while a change has waited for a sync
// longer than the timeout; and closes when the Service goes.
func TestHealthCheckNodePort(t *testing.T) {
	if os.Geteuid() == 0 { // in the tests' private network namespace (TestMain)
		run(t, "ip", "link", "set", "lo", "up")
	}
	port := freeTCPPort(t)
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, Spec: v1.ServiceSpec{
		Type: v1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: v1.ServiceExternalTrafficPolicyLocal, HealthCheckNodePort: port,
	}}
	other := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cluster"}, Spec: v1.ServiceSpec{
		Type: v1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: v1.ServiceExternalTrafficPolicyCluster, HealthCheckNodePort: freeTCPPort(t),
	}}
	ready, notReady, here, there := true, false, "node-1", "node-2"
	slice := func(eps ...discovery.Endpoint) *discovery.EndpointSlice {
		return &discovery.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-x",
			Labels: map[string]string{discovery.LabelServiceName: "web"}}, AddressType: discovery.AddressTypeIPv4, Endpoints: eps}
	}
	h := newHealthServer(slog.New(slog.NewTextHandler(io.Discard, nil)), time.Minute)
	now := time.Unix(1000, 0)
	h.now = func() time.Time { return now }
	defer h.close()
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)

	h.sync(Input{NodeName: here, Services: []*v1.Service{svc, other}, Slices: []*discovery.EndpointSlice{slice(
		discovery.Endpoint{Addresses: []string{"10.42.0.5"}, NodeName: &here, Conditions: discovery.EndpointConditions{Ready: &notReady}},
		discovery.Endpoint{Addresses: []string{"10.42.1.5"}, NodeName: &there, Conditions: discovery.EndpointConditions{Ready: &ready}},
	)}})
	checkHealth(t, url, http.StatusServiceUnavailable, 0, true)
	if len(h.ports) != 1 {
		t.Errorf("%d health ports open; want 1 (a Cluster-policy Service has none)", len(h.ports))
	}

	twoLocal := Input{NodeName: here, Services: []*v1.Service{svc}, Slices: []*discovery.EndpointSlice{slice(
		discovery.Endpoint{Addresses: []string{"10.42.0.5"}, NodeName: &here, Conditions: discovery.EndpointConditions{Ready: &ready}},
		discovery.Endpoint{Addresses: []string{"10.42.0.6"}, NodeName: &here},
	)}}
	h.sync(twoLocal)
	checkHealth(t, url, http.StatusOK, 2, true)

	// A change that waits: healthy for the timeout, then not.
	h.queued()
	now = now.Add(time.Minute)
	checkHealth(t, url, http.StatusOK, 2, true)
	now = now.Add(time.Second)
	checkHealth(t, url, http.StatusServiceUnavailable, 2, false)
	h.sync(twoLocal)
	checkHealth(t, url, http.StatusOK, 2, true)

	h.sync(Input{NodeName: here})
	if _, err := http.Get(url); err == nil {
		t.Errorf("the health check port still answers after its Service is gone")
	}
}

func checkHealth(t *testing.T, url string, wantCode, wantLocal int, wantHealthy bool) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Service        struct{ Namespace, Name string } `json:"service"`
		LocalEndpoints int                              `json:"localEndpoints"`
		Healthy        bool                             `json:"serviceProxyHealthy"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != wantCode || body.LocalEndpoints != wantLocal || body.Service.Name != "web" || body.Service.Namespace != "default" || body.Healthy != wantHealthy {
		t.Errorf("GET %s: %d %+v; want %d with localEndpoints %d, serviceProxyHealthy %v", url, resp.StatusCode, body, wantCode, wantLocal, wantHealthy)
	}
	if w := resp.Header.Get("X-Load-Balancing-Endpoint-Weight"); w != fmt.Sprint(wantLocal) {
		t.Errorf("X-Load-Balancing-Endpoint-Weight %q, want %d", w, wantLocal)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
}

func freeTCPPort(t *testing.T) int32 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return int32(l.Addr().(*net.TCPAddr).Port)
}
