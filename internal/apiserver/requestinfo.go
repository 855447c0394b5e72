package apiserver

import (
	"fmt"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// requestInfo is what a resource request's path and method say.
type requestInfo struct {
	GroupVersion schema.GroupVersion
	Namespace    string
	Resource     string
	Name         string
	Subresource  string
	// Verb is get, list, watch, create, update, patch, delete or deletecollection.
	Verb string
}

// parseResourcePath parses /api/v1/... and /apis/GROUP/VERSION/... paths. ok
// is false for paths that are not resource requests (discovery and the like).
func parseResourcePath(r *http.Request) (requestInfo, bool, error) {
	parts := splitPath(r.URL.Path)
	var info requestInfo
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		info.GroupVersion = schema.GroupVersion{Version: parts[1]}
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		info.GroupVersion = schema.GroupVersion{Group: parts[1], Version: parts[2]}
		parts = parts[3:]
	default:
		return info, false, nil
	}
	watchPath := false
	if parts[0] == "watch" {
		watchPath = true
		parts = parts[1:]
		if len(parts) == 0 {
			return info, true, fmt.Errorf("a watch path needs a resource")
		}
	}
	if parts[0] == "namespaces" && len(parts) > 1 {
		info.Namespace = parts[1]
		if len(parts) > 2 && parts[2] != "status" && parts[2] != "finalize" {
			parts = parts[2:]
		}
	}
	if len(parts) > 3 && parts[2] == "proxy" {
		parts = parts[:3] // the rest is the proxied path (see proxyPath)
	}
	if len(parts) > 3 {
		return info, true, fmt.Errorf("the path %q has too many segments", r.URL.Path)
	}
	info.Resource = parts[0]
	if len(parts) > 1 {
		info.Name = parts[1]
	}
	if len(parts) > 2 {
		info.Subresource = parts[2]
	}
	if info.Resource == "namespaces" {
		info.Namespace = ""
	}
	info.Verb = verbFor(r, info.Name, watchPath)
	return info, true, nil
}

func verbFor(r *http.Request, name string, watchPath bool) string {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if watchPath || isTrue(r.URL.Query().Get("watch")) {
			return "watch"
		}
		if name == "" {
			return "list"
		}
		return "get"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		if name == "" {
			return "deletecollection"
		}
		return "delete"
	}
	return strings.ToLower(r.Method)
}

func isTrue(s string) bool { return s == "true" || s == "1" }

func splitPath(path string) []string {
	path = strings.Trim(path, "/")
	if path == "" {
		return nil
	}
	return strings.Split(path, "/")
}
