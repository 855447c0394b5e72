package server

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"orch/internal/pki"
)

// upstreamHooks are the checks /readyz waits for, as upstream names them.
var upstreamHooks = []string{
	"poststarthook/start-system-namespaces-controller",
	"poststarthook/scheduling/bootstrap-system-priority-classes",
	"poststarthook/bootstrap-controller",
}

// TestBootstrapHooks: each hook's check fails with "not finished" until its
// objects were first made, and passes from then on.
func TestBootstrapHooks(t *testing.T) {
	p, err := Config{ServiceCIDR: "10.43.0.0/16", ClusterCIDR: "10.42.0.0/16", ClusterDNS: "10.43.0.10", HTTPSPort: 6443,
		AdvertiseAddress: "10.0.0.1"}.parse()
	if err != nil {
		t.Fatal(err)
	}
	b := newBootstrap(p, nil, testLogger())
	checks := addHookChecks(map[string]func(context.Context) error{}, b.hooks()...)
	wantChecks := func(when string, ok ...bool) {
		t.Helper()
		for i, name := range upstreamHooks {
			check := checks[name]
			if check == nil {
				t.Fatalf("no check %q among %d", name, len(checks))
			}
			if err := check(context.Background()); (err == nil) != ok[i] {
				t.Errorf("%s: %s = %v, want ok %v", when, name, err, ok[i])
			} else if err != nil && err.Error() != "not finished" {
				t.Errorf("%s: %s = %q, want \"not finished\"", when, name, err)
			}
		}
	}
	wantChecks("before the first round", false, false, false)

	client := fake.NewClientset()
	failServices := true
	client.PrependReactor("create", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
		if failServices {
			return true, nil, errors.New("etcdserver: request timed out")
		}
		return false, nil, nil
	})
	ctx := context.Background()
	if err := b.reconcile(ctx, client); err == nil {
		t.Fatal("reconcile succeeded although Services cannot be created")
	}
	wantChecks("with the Services failing", true, true, false)

	failServices = false
	b.reconcile(ctx, client) // the Endpoints may fail on the fake; the Services are made
	wantChecks("after a round that made them", true, true, true)
	if _, err := client.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{}); err != nil {
		t.Errorf("bootstrap-controller finished without the kubernetes Service: %v", err)
	}
}

// TestReadyzWaitsForBootstrap: on a fresh data dir, once /readyz first
// answers ok the default namespaces, the kubernetes Service and the
// priority classes exist (a ConfigMap can be created in default at once),
// and /readyz?verbose lists the post-start hooks as upstream names them.
func TestReadyzWaitsForBootstrap(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real server")
	}
	s := startTestServer(t)
	pool, err := pki.CAPoolFromPEM(s.caPEM)
	if err != nil {
		t.Fatal(err)
	}
	httpClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	get := func(path string) (int, string) {
		resp, err := httpClient.Get(s.url + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ticker := time.NewTicker(20 * time.Millisecond) // as close to the first ok as a script gets
	defer ticker.Stop()
	for code, body := get("/readyz"); code != http.StatusOK; code, body = get("/readyz") {
		select {
		case <-ctx.Done():
			t.Fatalf("/readyz not ok after 2 minutes: %d %s", code, body)
		case <-ticker.C:
		}
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}
	if _, err := s.admin.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Errorf("create a ConfigMap in default right after /readyz was ok: %v", err)
	}
	for _, ns := range defaultNamespaces {
		if _, err := s.admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
			t.Errorf("namespace %s right after /readyz was ok: %v", ns, err)
		}
	}
	if _, err := s.admin.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{}); err != nil {
		t.Errorf("Service default/kubernetes right after /readyz was ok: %v", err)
	}
	for name := range systemPriorityClasses {
		if _, err := s.admin.SchedulingV1().PriorityClasses().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("PriorityClass %s right after /readyz was ok: %v", name, err)
		}
	}

	code, body := get("/readyz?verbose")
	for _, name := range append(upstreamHooks, "poststarthook/rbac/bootstrap-roles") {
		if !strings.Contains(body, "[+]"+name+" ok\n") {
			t.Errorf("/readyz?verbose (%d) has no [+]%s ok:\n%s", code, name, body)
		}
	}
	// One check at a time is for those who may (system:public-info-viewer
	// names /readyz alone, as upstream).
	if code, _ := get("/readyz/poststarthook/bootstrap-controller"); code != http.StatusForbidden {
		t.Errorf("anonymous /readyz/poststarthook/bootstrap-controller = %d, want 403", code)
	}
	admin := s.admin.CoreV1().RESTClient()
	if body, err := admin.Get().AbsPath("/readyz/poststarthook/bootstrap-controller").DoRaw(ctx); err != nil || string(body) != "ok" {
		t.Errorf("/readyz/poststarthook/bootstrap-controller = %q, %v, want ok", body, err)
	}
	if _, err := admin.Get().AbsPath("/readyz/poststarthook/no-such-hook").DoRaw(ctx); !apierrors.IsNotFound(err) {
		t.Errorf("/readyz/poststarthook/no-such-hook: err = %v, want 404", err)
	}
	// Whether the etcd member votes is readiness only: a learner catching
	// up is alive.
	if _, body := get("/readyz?verbose"); !strings.Contains(body, "[+]etcd-voter ok\n") {
		t.Errorf("/readyz?verbose has no [+]etcd-voter ok:\n%s", body)
	}
	if _, body := get("/livez?verbose"); strings.Contains(body, "etcd-voter") || !strings.Contains(body, "[+]etcd ok\n") {
		t.Errorf("/livez?verbose should list etcd and not etcd-voter:\n%s", body)
	}
}
