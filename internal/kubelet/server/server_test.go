package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/client-go/util/exec"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"orch/internal/kubelet/server/servertest"
	"orch/internal/pki"
)

// reviews accepts the token "good" as alice and counts the reviews.
type reviews struct{ calls atomic.Int32 }

func (r *reviews) Create(ctx context.Context, tr *authenticationv1.TokenReview, _ metav1.CreateOptions) (*authenticationv1.TokenReview, error) {
	r.calls.Add(1)
	out := tr.DeepCopy()
	if tr.Spec.Token == "good" {
		out.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "alice", Groups: []string{"devs"}}}
	}
	return out, nil
}

func httpClient(t *testing.T, cfg *rest.Config) *http.Client {
	t.Helper()
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: rt, Timeout: 20 * time.Second}
}

func get(t *testing.T, client *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := client.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestAuthentication(t *testing.T) {
	rv := &reviews{}
	k := servertest.Start(t, servertest.Options{TokenReviews: rv})
	anonymous := &rest.Config{Host: k.URL, TLSClientConfig: rest.TLSClientConfig{CAData: k.PKI.CACertPEM}}
	withToken := func(token string) *rest.Config { c := rest.CopyConfig(anonymous); c.BearerToken = token; return c }
	for name, tc := range map[string]struct {
		cfg  *rest.Config
		want int
	}{
		"anonymous":          {anonymous, http.StatusUnauthorized},
		"refused token":      {withToken("bad"), http.StatusUnauthorized},
		"accepted token":     {withToken("good"), http.StatusOK},
		"client certificate": {k.Client, http.StatusOK},
	} {
		if code, body := get(t, httpClient(t, tc.cfg), k.URL+"/healthz"); code != tc.want {
			t.Errorf("%s: /healthz answered %d %q, want %d", name, code, body, tc.want)
		}
	}
	before := rv.calls.Load()
	get(t, httpClient(t, withToken("good")), k.URL+"/pods")
	if rv.calls.Load() != before {
		t.Errorf("an accepted token was reviewed again within the cache's lifetime")
	}
}

// A client certificate's user is reviewed as its CN and O, for this node.
func TestAuthorizationOfCertificates(t *testing.T) {
	sars := &servertest.AllowAll{}
	k := servertest.Start(t, servertest.Options{SubjectAccessReviews: sars})
	if code, body := get(t, httpClient(t, k.Client), k.URL+"/stats/summary"); code != http.StatusOK {
		t.Fatalf("/stats/summary answered %d %q", code, body)
	}
	want := authorizationv1.SubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Version: "v1", Resource: "nodes", Subresource: "stats", Name: "node-1"},
		User:               pki.AdminUser, Groups: []string{pki.AdminGroup},
	}
	if got := sars.Reviews(); len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Errorf("reviews %+v, want one %+v", got, want)
	}
}

func TestPodsAndSummary(t *testing.T) {
	k := servertest.Start(t, servertest.Options{})
	k.AddPod(t, "default", "web", "app")
	client := httpClient(t, k.Client)
	code, body := get(t, client, k.URL+"/pods")
	var list corev1.PodList
	if code != http.StatusOK || json.Unmarshal([]byte(body), &list) != nil || len(list.Items) != 1 || list.Items[0].Name != "web" || list.Kind != "PodList" {
		t.Fatalf("/pods answered %d %s", code, body)
	}
	code, body = get(t, client, k.URL+"/stats/summary")
	var sum statsapi.Summary
	if code != http.StatusOK || json.Unmarshal([]byte(body), &sum) != nil {
		t.Fatalf("/stats/summary answered %d %s", code, body)
	}
	if sum.Node.NodeName != "node-1" || sum.Node.CPU == nil || sum.Node.Memory == nil || sum.Node.Memory.WorkingSetBytes == nil || *sum.Node.Memory.WorkingSetBytes == 0 {
		t.Errorf("node stats: %s", body)
	}
	if len(sum.Pods) != 1 || sum.Pods[0].PodRef.Name != "web" || len(sum.Pods[0].Containers) != 1 || sum.Pods[0].Containers[0].Name != "app" {
		t.Errorf("pod stats: %s", body)
	}
}

func TestContainerLogs(t *testing.T) {
	k := servertest.Start(t, servertest.Options{})
	ids := k.AddPod(t, "default", "web", "app", "sidecar")
	k.WriteLog(t, ids[0], "stdout F one", "stderr F two", "stdout P thr", "stdout F ee")
	client := httpClient(t, k.Client)
	tests := []struct {
		path, want string
		code       int
	}{
		{"/containerLogs/default/web/app", "one\ntwo\nthree\n", 200},
		{"/containerLogs/default/web/app?tailLines=1", "ee\n", 200},
		{"/containerLogs/default/web/app?limitBytes=5", "one\nt", 200},
		{"/containerLogs/default/web/app?tailLines=-1", `{"message": "Invalid request."}` + "\n", 422},
		{"/containerLogs/default/web/nope", `container "nope" not found in pod "web"` + "\n", 404},
		{"/containerLogs/default/gone/app", `pod "gone" does not exist` + "\n", 404},
		{"/containerLogs/default/web/app?previous=true", `previous terminated container "app" in pod "web" not found` + "\n", 400},
	}
	for _, tt := range tests {
		if code, body := get(t, client, k.URL+tt.path); code != tt.code || body != tt.want {
			t.Errorf("GET %s: %d %q, want %d %q", tt.path, code, body, tt.code, tt.want)
		}
	}

	// Following prints new lines as they come and ends when the container exits.
	resp, err := client.Get(k.URL + "/containerLogs/default/web/app?follow=true&tailLines=0")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewReader(resp.Body)
	k.WriteLog(t, ids[0], "stdout F four")
	if line, err := lines.ReadString('\n'); err != nil || line != "four\n" {
		t.Fatalf("followed line: %q, %v", line, err)
	}
	if err := k.Fake.Exit(ids[0], 0, "Completed"); err != nil {
		t.Fatal(err)
	}
	if rest, err := io.ReadAll(lines); err != nil || len(rest) != 0 {
		t.Fatalf("after the exit: %q, %v", rest, err)
	}
}

func execURL(k *servertest.Kubelet, path string, q url.Values) string {
	return k.URL + path + "?" + q.Encode()
}

// executors are the two ways client-go (and kubectl) run exec and attach.
func executors(t *testing.T, cfg *rest.Config, u string) map[string]remotecommand.Executor {
	t.Helper()
	parsed, _ := url.Parse(u)
	spdyExec, err := remotecommand.NewSPDYExecutor(cfg, "POST", parsed)
	if err != nil {
		t.Fatal(err)
	}
	wsExec, err := remotecommand.NewWebSocketExecutor(cfg, "GET", u)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]remotecommand.Executor{"spdy": spdyExec, "websocket": wsExec}
}

func TestExecAndAttach(t *testing.T) {
	k := servertest.Start(t, servertest.Options{})
	k.AddPod(t, "default", "web", "app")
	q := func(cmd ...string) url.Values {
		v := url.Values{"command": cmd, "stdout": {"1"}, "stderr": {"1"}}
		return v
	}
	withStdin := func(v url.Values) url.Values { v.Set("stdin", "1"); return v }
	tests := []struct {
		name, path  string
		query       url.Values
		stdin       string
		tty         bool
		wantOut     string
		wantErrText string
		wantCode    int
	}{
		{name: "echo", path: "/exec/default/web/app", query: q("echo", "hi"), wantOut: "hi\n"},
		{name: "stdin", path: "/exec/default/web/app", query: withStdin(q("cat")), stdin: "piped\n", wantOut: "piped\n"},
		{name: "exit code", path: "/exec/default/web/app", query: q("fail", "3"), wantErrText: "failing\n", wantCode: 3},
		{name: "attach", path: "/attach/default/web/app", query: withStdin(url.Values{"stdout": {"1"}, "stderr": {"1"}}), stdin: "more\n", wantOut: "attached\nmore\n"},
		{name: "tty", path: "/exec/default/web/app", query: url.Values{"command": {"tty"}, "stdout": {"1"}, "tty": {"1"}}, tty: true, wantOut: "tty 80x24\n"},
	}
	for _, tt := range tests {
		for kind, ex := range executors(t, k.Client, execURL(k, tt.path, tt.query)) {
			t.Run(tt.name+"/"+kind, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				var stdout, stderr bytes.Buffer
				opts := remotecommand.StreamOptions{Stdout: &stdout, Tty: tt.tty}
				if !tt.tty {
					opts.Stderr = &stderr
				}
				if tt.query.Get("stdin") != "" {
					opts.Stdin = strings.NewReader(tt.stdin)
				}
				if tt.tty {
					sizes := make(chan remotecommand.TerminalSize, 1)
					sizes <- remotecommand.TerminalSize{Width: 80, Height: 24}
					opts.TerminalSizeQueue = sizeQueue(sizes)
				}
				err := ex.StreamWithContext(ctx, opts)
				var exitErr exec.CodeExitError
				switch {
				case tt.wantCode != 0:
					if !errors.As(err, &exitErr) || exitErr.Code != tt.wantCode {
						t.Fatalf("err = %v (%T), want exit code %d", err, err, tt.wantCode)
					}
				case err != nil:
					t.Fatal(err)
				}
				if stdout.String() != tt.wantOut || stderr.String() != tt.wantErrText {
					t.Errorf("stdout %q stderr %q, want %q and %q", stdout.String(), stderr.String(), tt.wantOut, tt.wantErrText)
				}
			})
		}
	}
}

// TestEphemeralContainer checks that logs, exec and attach (what kubectl
// debug -it uses) find an ephemeral container by its name.
func TestEphemeralContainer(t *testing.T) {
	k := servertest.Start(t, servertest.Options{})
	k.AddPod(t, "default", "web", "app")
	id := k.AddEphemeralContainer(t, "default", "web", "debugger", "app")
	k.WriteLog(t, id, "stdout F from the debugger")
	if code, body := get(t, httpClient(t, k.Client), k.URL+"/containerLogs/default/web/debugger"); code != 200 || body != "from the debugger\n" {
		t.Errorf("logs: %d %q", code, body)
	}
	for path, q := range map[string]url.Values{
		"/attach/default/web/debugger": {"stdout": {"1"}, "stderr": {"1"}},
		"/exec/default/web/debugger":   {"command": {"echo", "hi"}, "stdout": {"1"}, "stderr": {"1"}},
	} {
		var stdout, stderr bytes.Buffer
		ex := executors(t, k.Client, execURL(k, path, q))["websocket"]
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
		cancel()
		if err != nil || stdout.Len() == 0 {
			t.Errorf("%s: stdout %q stderr %q, %v", path, stdout.String(), stderr.String(), err)
		}
	}
}

type sizeQueue chan remotecommand.TerminalSize

func (q sizeQueue) Next() *remotecommand.TerminalSize {
	s, ok := <-q
	if !ok {
		return nil
	}
	return &s
}

func TestExecErrors(t *testing.T) {
	k := servertest.Start(t, servertest.Options{})
	k.AddPod(t, "default", "web", "app")
	client := httpClient(t, k.Client)
	for path, want := range map[string]int{
		"/exec/default/gone/app?command=echo&stdout=1":       http.StatusNotFound,
		"/exec/default/web/app?command=echo":                 http.StatusBadRequest,
		"/exec/default/web/wrong-uid/app?command=x&stdout=1": http.StatusNotFound,
	} {
		resp, err := client.Post(k.URL+path, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("POST %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
}

func TestPortForward(t *testing.T) {
	k := servertest.Start(t, servertest.Options{})
	k.AddPod(t, "default", "web", "app")
	u, _ := url.Parse(k.URL + "/portForward/default/web")
	transport, upgrader, err := spdy.RoundTripperFor(k.Client)
	if err != nil {
		t.Fatal(err)
	}
	wsDialer, err := portforward.NewSPDYOverWebsocketDialer(u, k.Client)
	if err != nil {
		t.Fatal(err)
	}
	dialers := map[string]httpstream.Dialer{
		"spdy":      spdy.NewDialer(upgrader, &http.Client{Transport: transport}, "POST", u),
		"websocket": wsDialer,
	}
	for name, d := range dialers {
		t.Run(name, func(t *testing.T) { servertest.PortForwardEcho(t, d, 8080) })
	}
}

// The kubelet API serves the four metrics endpoints (the upstream e2e
// framework scrapes /metrics through the apiserver after a failure).
func TestMetricsEndpoints(t *testing.T) {
	k := servertest.Start(t, servertest.Options{})
	client := httpClient(t, k.Client)
	for path, want := range map[string]string{
		"/metrics":          `kubelet_node_name{node="node-1"} 1`,
		"/metrics/resource": "resource_scrape_error 0",
		"/metrics/cadvisor": `container_cpu_usage_seconds_total{container="",id="/",namespace="",pod=""}`,
		"/metrics/probes":   "",
	} {
		code, body := get(t, client, k.URL+path)
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d, want 200 with %q:\n%s", path, code, want, body)
		}
	}
}
