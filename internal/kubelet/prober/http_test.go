package prober

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// seen is the last request a test server received.
type seen struct {
	mu  sync.Mutex
	req *http.Request
}

func (s *seen) set(r *http.Request) { s.mu.Lock(); s.req = r; s.mu.Unlock() }
func (s *seen) get() *http.Request  { s.mu.Lock(); defer s.mu.Unlock(); return s.req }

func testMux(s *seen) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { s.set(r); w.Write([]byte("fine")) })
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) { s.set(r); http.Error(w, "broken", 500) })
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(strings.Repeat("y", 100<<10))) })
	mux.HandleFunc("/same", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/other", func(w http.ResponseWriter, r *http.Request) {
		// Another host name for the same server: not followed.
		_, port, _ := net.SplitHostPort(r.Host)
		w.Header().Set("Location", "http://localhost:"+port+"/ok")
		w.WriteHeader(http.StatusMovedPermanently)
		w.Write([]byte("moved"))
	})
	mux.HandleFunc("/redirect-to-fail", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/fail", http.StatusFound) })
	return mux
}

func portOf(t *testing.T, rawURL string) int32 {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(u.Port())
	return int32(p)
}

func TestHTTPProbe(t *testing.T) {
	var s seen
	srv := httptest.NewServer(testMux(&s))
	defer srv.Close()
	tlsSrv := httptest.NewTLSServer(testMux(&s))
	defer tlsSrv.Close()
	port, tlsPort := portOf(t, srv.URL), portOf(t, tlsSrv.URL)
	c := &corev1.Container{Name: "app", Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: port}}}

	get := func(path string, p intstr.IntOrString, scheme corev1.URIScheme) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: p, Scheme: scheme}}, TimeoutSeconds: 5}
	}
	tests := []struct {
		name    string
		p       *corev1.Probe
		want    outcome
		output  string // prefix
		wantErr string
	}{
		{"200", get("/ok", intstr.FromInt32(port), ""), outcomeSuccess, "fine", ""},
		{"200 by port name", get("/ok", intstr.FromString("web"), "HTTP"), outcomeSuccess, "fine", ""},
		{"500", get("/fail", intstr.FromInt32(port), ""), outcomeFailure, "HTTP probe failed with statuscode: 500", ""},
		{"404", get("/missing", intstr.FromInt32(port), ""), outcomeFailure, "HTTP probe failed with statuscode: 404", ""},
		{"HTTPS, self-signed", get("/ok", intstr.FromInt32(tlsPort), corev1.URISchemeHTTPS), outcomeSuccess, "fine", ""},
		{"big body is cut", get("/big", intstr.FromInt32(port), ""), outcomeSuccess, strings.Repeat("y", 100), ""},
		{"redirect to the same host is followed", get("/same", intstr.FromInt32(port), ""), outcomeSuccess, "fine", ""},
		{"followed redirect to a failure", get("/redirect-to-fail", intstr.FromInt32(port), ""), outcomeFailure, "HTTP probe failed with statuscode: 500", ""},
		{"redirect to another host is a warning", get("/other", intstr.FromInt32(port), ""), outcomeWarning,
			"Probe terminated redirects, Response body: moved", ""},
		{"redirect loop", get("/loop", intstr.FromInt32(port), ""), outcomeFailure, `Get "/loop": stopped after 10 redirects`, ""},
		{"unknown port name", get("/ok", intstr.FromString("nope"), ""), outcomeUnknown, "", `port "nope" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, out, err := runOnce(t, nil, tt.p, c)
			if tt.wantErr != "" {
				if o != tt.want || err == nil || err.Error() != tt.wantErr {
					t.Errorf("probe = %v, %v; want %v, %q", o, err, tt.want, tt.wantErr)
				}
				return
			}
			if o != tt.want || err != nil || !strings.HasPrefix(out, tt.output) {
				t.Errorf("probe = %v, %q, %v; want %v, %q…", o, out, err, tt.want, tt.output)
			}
		})
	}
	if o, out, _ := runOnce(t, nil, get("/big", intstr.FromInt32(port), ""), c); o != outcomeSuccess || len(out) != maxOutput {
		t.Errorf("big body = %v, %d bytes; want success, %d bytes", o, len(out), maxOutput)
	}
}

func TestHTTPProbeRefused(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	port := int32(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	p := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(port)}}}
	o, out, err := runOnce(t, nil, p, nil)
	want := "Get \"http://127.0.0.1:" + strconv.Itoa(int(port)) + "/healthz\": dial tcp 127.0.0.1:"
	if o != outcomeFailure || err != nil || !strings.HasPrefix(out, want) || !strings.Contains(out, "connection refused") {
		t.Errorf("probe = %v, %q, %v; want failure %q… connection refused", o, out, err, want)
	}
}

func TestHTTPProbeHeaders(t *testing.T) {
	var s seen
	srv := httptest.NewServer(testMux(&s))
	defer srv.Close()
	port := portOf(t, srv.URL)
	probe := func(path string, headers ...corev1.HTTPHeader) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: path, Port: intstr.FromInt32(port), HTTPHeaders: headers}}}
	}

	if o, _, err := runOnce(t, nil, probe("/ok?x=1"), nil); o != outcomeSuccess || err != nil {
		t.Fatalf("probe = %v, %v", o, err)
	}
	r := s.get()
	if ua := r.Header.Get("User-Agent"); ua != "kube-probe/1.37" {
		t.Errorf("User-Agent = %q, want kube-probe/1.37", ua)
	}
	if a := r.Header.Get("Accept"); a != "*/*" {
		t.Errorf("Accept = %q, want */*", a)
	}
	if r.Host != "127.0.0.1:"+strconv.Itoa(int(port)) || r.URL.RawQuery != "x=1" || r.Method != http.MethodGet {
		t.Errorf("request = %s %s host %s", r.Method, r.URL, r.Host)
	}
	if ae := r.Header.Get("Accept-Encoding"); ae != "" {
		t.Errorf("Accept-Encoding = %q, want none", ae)
	}

	_, _, _ = runOnce(t, nil, probe("/ok",
		corev1.HTTPHeader{Name: "Host", Value: "example.com"},
		corev1.HTTPHeader{Name: "user-agent", Value: "mine/1"},
		corev1.HTTPHeader{Name: "X-Custom", Value: "a"},
		corev1.HTTPHeader{Name: "X-Custom", Value: "b"},
		corev1.HTTPHeader{Name: "Accept", Value: ""}), nil)
	r = s.get()
	if r.Host != "example.com" {
		t.Errorf("Host = %q, want example.com", r.Host)
	}
	if ua := r.Header.Get("User-Agent"); ua != "mine/1" {
		t.Errorf("User-Agent = %q, want mine/1", ua)
	}
	if got := r.Header.Values("X-Custom"); strings.Join(got, ",") != "a,b" {
		t.Errorf("X-Custom = %q, want a, b", got)
	}
	if _, ok := r.Header["Accept"]; ok {
		t.Errorf("Accept = %q, want none (an empty Accept header drops it)", r.Header.Get("Accept"))
	}

	_, _, _ = runOnce(t, nil, probe("/ok", corev1.HTTPHeader{Name: "Accept", Value: "application/json"}), nil)
	if a := s.get().Header.Get("Accept"); a != "application/json" {
		t.Errorf("Accept = %q, want application/json", a)
	}
}
