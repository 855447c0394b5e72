package localstore

import (
	"net/http"
	"net/url"
	"strings"
)

// kind is what the store does with a request.
type kind int

const (
	passThrough kind = iota // not the store's business
	get                     // GET of one object the node needs: recorded, answered offline
	list                    // GET of a collection: recorded, answered offline
	watch                   // GET ?watch=true of a collection: recorded, never answered offline
	token                   // POST of a service account's TokenRequest: recorded, answered offline while valid
)

// request is a classified API request.
type request struct {
	kind kind
	// key names what is recorded: the object's path for get and token
	// (token adds the request's spec), the collection's path and
	// selectors for list and watch.
	key string
	// sealed is true for what is stored encrypted (Secrets, tokens).
	sealed bool
	// initialEvents is true for a watch that begins with the whole
	// collection (sendInitialEvents=true, the WatchList protocol).
	initialEvents bool
	// resourceVersion is where a watch starts.
	resourceVersion string
	// page is true for a list that asks for the next part of a
	// collection (continue): a page is never recorded as the collection,
	// nor is a first page whose answer says more follows.
	page bool
}

// collections are the resources whose lists and watches the node's
// informers make and the store records: its pods, the Services and
// EndpointSlices its proxy and DNS serve, the Nodes its routes follow,
// the endpoints of the servers it follows, the runtime classes, and the
// NetworkPolicies (with every pod and namespace) it enforces.
var collections = map[string]bool{
	"pods": true, "services": true, "endpointslices": true, "nodes": true,
	"endpoints": true, "runtimeclasses": true, "networkpolicies": true, "namespaces": true,
}

// objects are the resources the node reads one by one (GET) and the
// store records: what its pods' volumes, environment and image pulls use,
// its own Node, runtime classes.
var objects = map[string]bool{
	"secrets": true, "configmaps": true, "persistentvolumeclaims": true, "persistentvolumes": true,
	"nodes": true, "runtimeclasses": true, "serviceaccounts": true, "pods": true,
}

// classify says what the store does with r. It reads only the method and
// the URL: /api/v1/[namespaces/NS/]RESOURCE[/NAME[/SUBRESOURCE]] and
// /apis/GROUP/VERSION/[namespaces/NS/]RESOURCE[/NAME[/SUBRESOURCE]].
func classify(r *http.Request) request {
	p, ok := parsePath(r.URL.Path)
	if !ok {
		return request{}
	}
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodPost && p.resource == "serviceaccounts" && p.name != "" && p.subresource == "token":
		return request{kind: token, key: r.URL.Path, sealed: true}
	case r.Method != http.MethodGet || p.subresource != "":
		return request{}
	case p.name != "":
		if !objects[p.resource] {
			return request{}
		}
		return request{kind: get, key: r.URL.Path, sealed: p.resource == "secrets"}
	case !collections[p.resource]:
		return request{}
	}
	req := request{kind: list, key: collectionKey(r.URL.Path, q)}
	if q.Get("watch") == "true" || q.Get("watch") == "1" {
		req.kind = watch
		req.initialEvents = q.Get("sendInitialEvents") == "true"
		req.resourceVersion = q.Get("resourceVersion")
		return req
	}
	req.page = q.Get("continue") != ""
	return req
}

// collectionKey is a collection's path with the query parameters that
// choose its members, in a fixed order: every list and watch of the same
// members has the same key, whatever their resource versions.
func collectionKey(path string, q url.Values) string {
	key, sep := path, "?"
	for _, name := range []string{"labelSelector", "fieldSelector"} {
		if v := q.Get(name); v != "" {
			key += sep + name + "=" + v
			sep = "&"
		}
	}
	return key
}

// apiPath is an API path taken apart.
type apiPath struct {
	namespace, resource, name, subresource string
}

// parsePath takes an API path apart; ok is false for anything else
// (discovery, /healthz, a malformed path).
func parsePath(path string) (apiPath, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api" && parts[1] == "v1":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return apiPath{}, false
	}
	var p apiPath
	if len(parts) >= 3 && parts[0] == "namespaces" {
		p.namespace, parts = parts[1], parts[2:]
	}
	switch len(parts) {
	case 1:
		p.resource = parts[0]
	case 2:
		p.resource, p.name = parts[0], parts[1]
	case 3:
		p.resource, p.name, p.subresource = parts[0], parts[1], parts[2]
	default:
		return apiPath{}, false
	}
	for _, s := range []string{p.namespace, p.resource, p.name, p.subresource} {
		if s == "." || s == ".." {
			return apiPath{}, false
		}
	}
	return p, p.resource != ""
}
