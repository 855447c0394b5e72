package localstore

import (
	"net/http"
	"net/url"
	"testing"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		method, url string
		want        request
	}{
		{"GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1&resourceVersion=0&limit=500",
			request{kind: list, key: "/api/v1/pods?fieldSelector=spec.nodeName=n1"}},
		{"GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1&continue=abc",
			request{kind: list, key: "/api/v1/pods?fieldSelector=spec.nodeName=n1", page: true}},
		{"GET", "/api/v1/pods?watch=true&fieldSelector=spec.nodeName%3Dn1&resourceVersion=12&allowWatchBookmarks=true",
			request{kind: watch, key: "/api/v1/pods?fieldSelector=spec.nodeName=n1", resourceVersion: "12"}},
		{"GET", "/apis/discovery.k8s.io/v1/endpointslices?watch=1&sendInitialEvents=true&labelSelector=a%3Db",
			request{kind: watch, key: "/apis/discovery.k8s.io/v1/endpointslices?labelSelector=a=b", initialEvents: true}},
		{"GET", "/api/v1/namespaces/ns/secrets/s1", request{kind: get, key: "/api/v1/namespaces/ns/secrets/s1", sealed: true}},
		{"GET", "/api/v1/namespaces/ns/configmaps/c1", request{kind: get, key: "/api/v1/namespaces/ns/configmaps/c1"}},
		{"GET", "/api/v1/nodes/n1", request{kind: get, key: "/api/v1/nodes/n1"}},
		{"POST", "/api/v1/namespaces/ns/serviceaccounts/default/token",
			request{kind: token, key: "/api/v1/namespaces/ns/serviceaccounts/default/token", sealed: true}},
		// Not the store's business.
		{"GET", "/api/v1/namespaces/ns/secrets", request{}},   // no Secret lists are kept
		{"GET", "/api/v1/namespaces/ns/events/e1", request{}}, // nor events
		{"GET", "/api/v1/namespaces/ns/pods/p1/log", request{}},
		{"PUT", "/api/v1/namespaces/ns/pods/p1/status", request{}},
		{"PATCH", "/api/v1/nodes/n1", request{}},
		{"POST", "/api/v1/namespaces/ns/pods", request{}},
		{"GET", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1", request{}},
		{"GET", "/api", request{}},
		{"GET", "/apis/apps/v1", request{}},
		{"GET", "/healthz", request{}},
		{"GET", "/api/v1/namespaces/../secrets/s", request{}},
		{"GET", "/api/v1/a/b/c/d/e", request{}},
	}
	for _, c := range cases {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Fatal(err)
		}
		got := classify(&http.Request{Method: c.method, URL: u})
		if got != c.want {
			t.Errorf("%s %s:\n got %+v\nwant %+v", c.method, c.url, got, c.want)
		}
	}
}

func FuzzClassify(f *testing.F) {
	for _, s := range []string{"/api/v1/pods?watch=true", "/apis/g/v/namespaces/n/r/x/y", "//api//v1/", "/api/v1/namespaces/a/pods/../x"} {
		f.Add("GET", s)
	}
	f.Fuzz(func(t *testing.T, method, raw string) {
		u, err := url.Parse(raw)
		if err != nil {
			return
		}
		r := classify(&http.Request{Method: method, URL: u})
		if r.kind != passThrough && r.key == "" {
			t.Fatalf("%s %q: kind %d without a key", method, raw, r.kind)
		}
	})
}
