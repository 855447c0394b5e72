package apiserver_test

import (
	"io"
	"net/http"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
)

// TestDiscovery checks client-go's discovery (which asks for the aggregated
// document first) and the plain documents the older path reads.
func TestDiscovery(t *testing.T) {
	srv, _ := newClient(t, "")
	client := discovery.NewDiscoveryClientForConfigOrDie(srv.Config)
	groups, lists, err := client.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) < 12 {
		t.Errorf("%d groups, want the 12 orch serves", len(groups))
	}
	// Upstream's aggregator lists its own group first.
	if len(groups) < 2 || groups[0].Name != "" || groups[1].Name != "apiregistration.k8s.io" {
		t.Errorf("groups begin %v, want core, then apiregistration.k8s.io", groups[:min(len(groups), 3)])
	}
	found := map[string]string{}
	for _, list := range lists {
		for _, r := range list.APIResources {
			found[list.GroupVersion+"/"+r.Name] = r.Kind
			if r.Name == "deployments" && (len(r.ShortNames) == 0 || r.ShortNames[0] != "deploy" || len(r.Categories) == 0 || r.Categories[0] != "all") {
				t.Errorf("deployments: shortNames %v categories %v", r.ShortNames, r.Categories)
			}
		}
	}
	for name, kind := range map[string]string{
		"v1/pods": "Pod", "v1/pods/binding": "Binding", "v1/pods/eviction": "Eviction", "v1/pods/ephemeralcontainers": "Pod", "v1/namespaces/finalize": "Namespace",
		"apps/v1/deployments": "Deployment", "apps/v1/deployments/scale": "Scale", "apps/v1/deployments/status": "Deployment",
		"apiregistration.k8s.io/v1/apiservices": "APIService", "apiregistration.k8s.io/v1/apiservices/status": "APIService",
		"batch/v1/cronjobs": "CronJob", "rbac.authorization.k8s.io/v1/clusterroles": "ClusterRole", "autoscaling/v2/horizontalpodautoscalers": "HorizontalPodAutoscaler",
	} {
		if found[name] != kind {
			t.Errorf("discovery has %s as %q, want %q", name, found[name], kind)
		}
	}
	// Upstream's hashes of the storage group, version and kind (as a real
	// cluster shows them); subresources have none.
	// (Aggregated discovery has no hashes: read /api/v1 and /apis/apps/v1.)
	hashes := map[string]string{}
	for _, gv := range []string{"v1", "apps/v1"} {
		list, err := client.ServerResourcesForGroupVersion(gv)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range list.APIResources {
			hashes[gv+"/"+r.Name] = r.StorageVersionHash
		}
	}
	for name, hash := range map[string]string{"v1/configmaps": "qFsyl6wFWjQ=", "apps/v1/deployments": "8aSe+NMegvE=", "apps/v1/deployments/scale": ""} {
		if hashes[name] != hash {
			t.Errorf("storage version hash of %s = %q, want %q", name, hashes[name], hash)
		}
	}
	for _, c := range []struct{ accept, contentType string }{
		{"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"},
		{"application/json", "application/json"},
	} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/apis", nil)
		req.Header.Set("Accept", c.accept)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got := resp.Header.Get("Content-Type"); got != c.contentType {
			t.Errorf("Accept %q: Content-Type %q, want %q", c.accept, got, c.contentType)
		}
	}
}

// TestDiscoveryOfUnservedGroups: a group or group version orch does not
// serve is 404 with a Status, as upstream, so discovery clients can tell
// "not (yet) served" from an answer.
func TestDiscoveryOfUnservedGroups(t *testing.T) {
	srv, _ := newClient(t, "")
	client := discovery.NewDiscoveryClientForConfigOrDie(srv.Config)
	for _, path := range []string{"/apis/example.com", "/apis/example.com/v1", "/apis/apps/v9", "/api/v2"} {
		err := client.RESTClient().Get().AbsPath(path).Do(testContext(t)).Error()
		if !apierrors.IsNotFound(err) {
			t.Errorf("GET %s: %v, want 404 NotFound", path, err)
		}
	}
}
