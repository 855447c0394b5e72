package openapi

import (
	"reflect"
	"sort"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Media types of request and response bodies.
var (
	responseTypes = []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf"}
	listTypes     = append(append([]string(nil), responseTypes...), "application/json;stream=watch", "application/vnd.kubernetes.protobuf;stream=watch")
	anyBody       = []string{"*/*"}
	patchBodies   = []string{
		"application/apply-patch+yaml",
		"application/json-patch+json",
		"application/merge-patch+json",
		"application/strategic-merge-patch+json",
	}
)

// Types the paths refer to besides the resources themselves.
var (
	statusType       = reflect.TypeOf(metav1.Status{})
	deleteOptsType   = reflect.TypeOf(metav1.DeleteOptions{})
	watchEventType   = reflect.TypeOf(metav1.WatchEvent{})
	patchType        = reflect.TypeOf(metav1.Patch{})
	resourceListType = reflect.TypeOf(metav1.APIResourceList{})
	scaleType        = reflect.TypeOf(autoscalingv1.Scale{})
	scaleGVK         = autoscalingv1.SchemeGroupVersion.WithKind("Scale")
)

// param is a path or query parameter.
type param struct {
	name, in, typ, desc string
}

func query(name, typ, desc string) param { return param{name, "query", typ, desc} }

var (
	pPretty          = query("pretty", "string", "If 'true', the response is indented.")
	pNamespace       = param{"namespace", "path", "string", "namespace of the object"}
	pDryRun          = query("dryRun", "string", "When present, the request is checked and processed but nothing is persisted. The only valid value is All.")
	pFieldManager    = query("fieldManager", "string", "Name of the actor making the change, recorded in metadata.managedFields. At most 128 printable characters; apply patches require it.")
	pFieldValidation = query("fieldValidation", "string", "What the server does with unknown or duplicate fields in the body: Ignore drops them, Warn (the default) drops them with a warning, Strict fails the request.")
	pForce           = query("force", "boolean", "Apply patches only: take over fields owned by other managers instead of failing with a conflict.")
	pGrace           = query("gracePeriodSeconds", "integer", "Seconds to wait before the object is deleted; 0 deletes at once. When unset, the resource's default applies.")
	pIgnoreCorrupt   = query("ignoreStoreReadErrorWithClusterBreakingPotential", "boolean", "Delete an object that cannot be read back from storage, skipping finalizers and preconditions. Unsafe.")
	pOrphan          = query("orphanDependents", "boolean", "Deprecated, use propagationPolicy: whether dependents are orphaned.")
	pPropagation     = query("propagationPolicy", "string", "How the garbage collector treats dependents: Orphan, Background or Foreground.")

	listParams = []param{
		query("allowWatchBookmarks", "boolean", "Ask for BOOKMARK events on a watch; the server may send them when it chooses."),
		query("continue", "string", "The metadata.continue token of a previous, limited list: fetches the next page."),
		query("fieldSelector", "string", "Return only objects whose fields match this selector. Defaults to everything."),
		query("labelSelector", "string", "Return only objects whose labels match this selector. Defaults to everything."),
		query("limit", "integer", "Largest number of objects to return; metadata.continue is set when there are more."),
		query("resourceVersion", "string", "Which resource version the request may be served from; see resourceVersionMatch."),
		query("resourceVersionMatch", "string", "How resourceVersion applies to a list: Exact or NotOlderThan."),
		query("sendInitialEvents", "boolean", "With watch=true: start the stream with synthetic events for the existing objects, then a bookmark."),
		query("timeoutSeconds", "integer", "Limit on how long the list or watch call may take."),
		query("watch", "boolean", "Stream changes to the described objects as add, update and delete events."),
	}
	writeParams  = []param{pDryRun, pFieldManager, pFieldValidation}
	deleteParams = []param{pDryRun, pGrace, pIgnoreCorrupt, pOrphan, pPropagation}
)

// operation is one method on one path, independent of the OpenAPI version.
type operation struct {
	id, desc, action string
	gvk              *schema.GroupVersionKind
	params           []param
	body             reflect.Type // nil: no body
	bodyRequired     bool
	bodyTypes        []string
	responses        []response
	produces         []string
}

type response struct {
	code, desc string
	body       reflect.Type // nil: no body
}

// found and saved are the responses of reads and of writes.
func found(t reflect.Type) []response {
	return []response{{"200", "OK", t}, {"401", "Unauthorized", nil}}
}

func saved(t reflect.Type) []response {
	return []response{{"200", "OK", t}, {"201", "Created", t}, {"401", "Unauthorized", nil}}
}

// pathSet collects the paths of one group version.
type pathSet struct {
	s     *schemas
	tag   string
	paths object
}

func (p *pathSet) add(path, method string, pathParams []param, op operation) {
	item, _ := p.paths[path].(object)
	if item == nil {
		item = object{}
		if len(pathParams) > 0 {
			item["parameters"] = p.params(pathParams)
		}
		p.paths[path] = item
	}
	item[method] = p.render(op)
}

func (p *pathSet) params(params []param) []any {
	sorted := append([]param(nil), params...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	out := make([]any, 0, len(sorted))
	for _, pr := range sorted {
		o := object{"name": pr.name, "in": pr.in, "description": pr.desc}
		if pr.in == "path" {
			o["required"] = true
		}
		if p.s.v3 {
			o["schema"] = object{"type": pr.typ, "uniqueItems": true}
		} else {
			o["type"] = pr.typ
			o["uniqueItems"] = true
		}
		out = append(out, o)
	}
	return out
}

func (p *pathSet) render(op operation) object {
	s := p.s
	o := object{"description": op.desc, "operationId": op.id, "tags": []string{p.tag}}
	if op.action != "" {
		o["x-kubernetes-action"] = op.action
	}
	if op.gvk != nil {
		o["x-kubernetes-group-version-kind"] = object{"group": op.gvk.Group, "version": op.gvk.Version, "kind": op.gvk.Kind}
	}
	params := p.params(op.params)
	responses := object{}
	if s.v3 {
		if op.body != nil {
			content := object{}
			for _, mt := range op.bodyTypes {
				content[mt] = object{"schema": s.ref(s.define(op.body))}
			}
			body := object{"content": content}
			if op.bodyRequired {
				body["required"] = true
			}
			o["requestBody"] = body
		}
		for _, r := range op.responses {
			resp := object{"description": r.desc}
			if r.body != nil {
				content := object{}
				for _, mt := range op.produces {
					content[mt] = object{"schema": s.ref(s.define(r.body))}
				}
				resp["content"] = content
			}
			responses[r.code] = resp
		}
	} else {
		o["schemes"] = []string{"https"}
		o["produces"] = op.produces
		if op.body != nil {
			o["consumes"] = op.bodyTypes
			body := object{"name": "body", "in": "body", "schema": s.ref(s.define(op.body))}
			if op.bodyRequired {
				body["required"] = true
			}
			params = append([]any{body}, params...)
		}
		for _, r := range op.responses {
			resp := object{"description": r.desc}
			if r.body != nil {
				resp["schema"] = s.ref(s.define(r.body))
			}
			responses[r.code] = resp
		}
	}
	if len(params) > 0 {
		o["parameters"] = params
	}
	o["responses"] = responses
	return o
}

// groupVersionPaths returns the paths of one group version: its resource list
// and, for each resource, the operations its verbs allow.
func (s *schemas) groupVersionPaths(gv schema.GroupVersion, resources []Resource) object {
	p := &pathSet{s: s, tag: operationTag(gv), paths: object{}}
	prefix := "/" + groupVersionPath(gv)
	p.add(prefix+"/", "get", nil, operation{
		id: "get" + operationGV(gv) + "APIResources", desc: "get the resources of " + gv.String(),
		responses: found(resourceListType), produces: responseTypes,
	})
	for _, r := range resources {
		p.resource(prefix, r)
	}
	return p.paths
}

func (p *pathSet) resource(prefix string, r Resource) {
	kind, gvk := r.GVK.Kind, r.GVK
	verbs := map[string]bool{}
	for _, v := range r.Verbs {
		verbs[v] = true
	}
	gvID, scope := operationGV(gvk.GroupVersion()), ""
	if r.Namespaced {
		scope = "Namespaced"
	}
	id := func(verb, suffix string) string { return verb + gvID + scope + kind + suffix }
	scopePath, scopeParams := "", []param{pPretty}
	if r.Namespaced {
		scopePath, scopeParams = "/namespaces/{namespace}", []param{pNamespace, pPretty}
	}
	itemParams := append([]param{{"name", "path", "string", "name of the " + kind}}, scopeParams...)
	collection := prefix + scopePath + "/" + r.Resource
	item := collection + "/{name}"

	if verbs["list"] {
		p.add(collection, "get", scopeParams, operation{
			id: id("list", ""), desc: "list or watch objects of kind " + kind, action: "list", gvk: &gvk,
			params: listParams, responses: found(r.ListType), produces: listTypes,
		})
		if r.Namespaced {
			p.add(prefix+"/"+r.Resource, "get", []param{pPretty}, operation{
				id: "list" + gvID + kind + "ForAllNamespaces", desc: "list or watch objects of kind " + kind + " in all namespaces",
				action: "list", gvk: &gvk, params: listParams, responses: found(r.ListType), produces: listTypes,
			})
		}
	}
	if verbs["create"] {
		p.add(collection, "post", scopeParams, operation{
			id: id("create", ""), desc: "create a " + kind, action: "post", gvk: &gvk,
			params: writeParams, body: r.Type, bodyRequired: true, bodyTypes: anyBody,
			responses: []response{{"200", "OK", r.Type}, {"201", "Created", r.Type}, {"202", "Accepted", r.Type}, {"401", "Unauthorized", nil}},
			produces:  responseTypes,
		})
	}
	if verbs["deletecollection"] {
		p.add(collection, "delete", scopeParams, operation{
			id:   "delete" + gvID + "Collection" + scope + kind,
			desc: "delete a collection of " + kind, action: "deletecollection", gvk: &gvk,
			params: append(append([]param(nil), listParams...), deleteParams...), body: deleteOptsType, bodyTypes: anyBody,
			responses: found(statusType), produces: responseTypes,
		})
	}
	if verbs["get"] {
		p.add(item, "get", itemParams, operation{
			id: id("read", ""), desc: "read the specified " + kind, action: "get", gvk: &gvk,
			responses: found(r.Type), produces: responseTypes,
		})
	}
	if verbs["update"] {
		p.add(item, "put", itemParams, operation{
			id: id("replace", ""), desc: "replace the specified " + kind, action: "put", gvk: &gvk,
			params: writeParams, body: r.Type, bodyRequired: true, bodyTypes: anyBody,
			responses: saved(r.Type), produces: responseTypes,
		})
	}
	if verbs["patch"] {
		p.add(item, "patch", itemParams, operation{
			id: id("patch", ""), desc: "partially update the specified " + kind, action: "patch", gvk: &gvk,
			params: append(append([]param(nil), writeParams...), pForce), body: patchType, bodyRequired: true, bodyTypes: patchBodies,
			responses: saved(r.Type), produces: responseTypes,
		})
	}
	if verbs["delete"] {
		p.add(item, "delete", itemParams, operation{
			id: id("delete", ""), desc: "delete a " + kind, action: "delete", gvk: &gvk,
			params: deleteParams, body: deleteOptsType, bodyTypes: anyBody,
			responses: []response{{"200", "OK", statusType}, {"202", "Accepted", statusType}, {"401", "Unauthorized", nil}},
			produces:  responseTypes,
		})
	}
	if verbs["watch"] {
		watch := prefix + "/watch" + scopePath + "/" + r.Resource
		p.add(watch+"/{name}", "get", itemParams, operation{
			id: id("watch", ""), desc: "watch changes to one " + kind + " (deprecated: use list with watch=true and a fieldSelector on metadata.name)",
			action: "watch", gvk: &gvk, params: listParams, responses: found(watchEventType), produces: listTypes,
		})
		p.add(watch, "get", scopeParams, operation{
			id: id("watch", "List"), desc: "watch changes to a list of " + kind + " (deprecated: use list with watch=true)",
			action: "watchlist", gvk: &gvk, params: listParams, responses: found(watchEventType), produces: listTypes,
		})
		if r.Namespaced {
			p.add(prefix+"/watch/"+r.Resource, "get", []param{pPretty}, operation{
				id: "watch" + gvID + kind + "ListForAllNamespaces", desc: "watch changes to " + kind + " objects in all namespaces (deprecated: use list with watch=true)",
				action: "watchlist", gvk: &gvk, params: listParams, responses: found(watchEventType), produces: listTypes,
			})
		}
	}
	for _, sub := range r.Subresources {
		t, subGVK := r.Type, gvk
		if sub == "scale" {
			t, subGVK = scaleType, scaleGVK
		}
		path, suffix := item+"/"+sub, strings.ToUpper(sub[:1])+sub[1:]
		if verbs["get"] {
			p.add(path, "get", itemParams, operation{
				id: id("read", suffix), desc: "read the " + sub + " of the specified " + kind, action: "get", gvk: &subGVK,
				responses: found(t), produces: responseTypes,
			})
		}
		if verbs["update"] {
			p.add(path, "put", itemParams, operation{
				id: id("replace", suffix), desc: "replace the " + sub + " of the specified " + kind, action: "put", gvk: &subGVK,
				params: writeParams, body: t, bodyRequired: true, bodyTypes: anyBody, responses: saved(t), produces: responseTypes,
			})
		}
		if verbs["patch"] {
			p.add(path, "patch", itemParams, operation{
				id: id("patch", suffix), desc: "partially update the " + sub + " of the specified " + kind, action: "patch", gvk: &subGVK,
				params: append(append([]param(nil), writeParams...), pForce), body: patchType, bodyRequired: true, bodyTypes: patchBodies,
				responses: saved(t), produces: responseTypes,
			})
		}
	}
}

// groupVersionPath is "api/v1" or "apis/<group>/<version>".
func groupVersionPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}

// groupWords splits a group into the words of operation ids:
// "rbac.authorization.k8s.io" → [rbac authorization]; "" → [core].
func groupWords(group string) []string {
	if group == "" {
		return []string{"core"}
	}
	return strings.Split(strings.TrimSuffix(group, ".k8s.io"), ".")
}

func title(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// operationGV is the group version part of operation ids: "AppsV1", "RbacAuthorizationV1".
func operationGV(gv schema.GroupVersion) string {
	var b strings.Builder
	for _, w := range groupWords(gv.Group) {
		b.WriteString(title(w))
	}
	return b.String() + title(gv.Version)
}

// operationTag is the tag of a group version's operations: "apps_v1", "rbacAuthorization_v1".
func operationTag(gv schema.GroupVersion) string {
	words := groupWords(gv.Group)
	tag := words[0]
	for _, w := range words[1:] {
		tag += title(w)
	}
	return tag + "_" + gv.Version
}
