package apiserver

import (
	"net"
	"net/http"
	"sort"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/discovery"
)

var allVerbs = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// serveDiscovery answers /api, /apis, /api/v1, /apis/GROUP and
// /apis/GROUP/VERSION; false when the path is none of these.
func (s *Server) serveDiscovery(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	parts := splitPath(r.URL.Path)
	switch {
	case len(parts) == 1 && wantsAggregated(r) && (parts[0] == "api" || parts[0] == "apis"):
		s.serveAggregated(w, parts[0] == "api")
	case len(parts) == 1 && parts[0] == "api":
		s.respond(w, r, http.StatusOK, &metav1.APIVersions{Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: serverAddress(r)}}})
	case len(parts) == 1 && parts[0] == "apis":
		s.respond(w, r, http.StatusOK, s.groupList())
	case len(parts) == 2 && parts[0] == "api" && parts[1] == "v1":
		return s.respondResources(w, r, schema.GroupVersion{Version: "v1"})
	case len(parts) == 2 && parts[0] == "apis":
		for _, g := range s.groupList().Groups {
			if g.Name == parts[1] {
				s.respond(w, r, http.StatusOK, &g)
				return true
			}
		}
		return false
	case len(parts) == 3 && parts[0] == "apis":
		return s.respondResources(w, r, schema.GroupVersion{Group: parts[1], Version: parts[2]})
	default:
		return false
	}
	return true
}

func serverAddress(r *http.Request) string {
	host := r.Host
	if _, _, err := net.SplitHostPort(host); err != nil {
		host = net.JoinHostPort(host, "443")
	}
	return host
}

func (s *Server) groupList() *metav1.APIGroupList {
	list := &metav1.APIGroupList{}
	index := map[string]int{}
	for _, g := range s.apiGroups() {
		if g.gv.Group == "" {
			continue
		}
		gvd := metav1.GroupVersionForDiscovery{GroupVersion: g.gv.String(), Version: g.gv.Version}
		if i, ok := index[g.gv.Group]; ok {
			list.Groups[i].Versions = append(list.Groups[i].Versions, gvd)
			continue
		}
		index[g.gv.Group] = len(list.Groups)
		list.Groups = append(list.Groups, metav1.APIGroup{Name: g.gv.Group, Versions: []metav1.GroupVersionForDiscovery{gvd}, PreferredVersion: gvd})
	}
	return list
}

func (s *Server) respondResources(w http.ResponseWriter, r *http.Request, gv schema.GroupVersion) bool {
	for _, g := range s.apiGroups() {
		if g.gv == gv {
			s.respond(w, r, http.StatusOK, resourceList(g))
			return true
		}
	}
	return false
}

func resourceList(g apiGroup) *metav1.APIResourceList {
	list := &metav1.APIResourceList{GroupVersion: g.gv.String()}
	for _, rs := range g.resources {
		res := rs.res
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name: res.Resource, SingularName: res.SingularName, Namespaced: res.Namespaced, Kind: res.Kind,
			Verbs: allVerbs, ShortNames: res.ShortNames, Categories: res.Categories, StorageVersionHash: storageVersionHash(rs),
		})
		for _, sub := range subresourcesOf(rs) {
			ar := metav1.APIResource{Name: res.Resource + "/" + sub.name, Namespaced: res.Namespaced, Kind: sub.gvk.Kind, Verbs: sub.verbs}
			if sub.gvk.GroupVersion() != rs.gvk.GroupVersion() {
				ar.Group, ar.Version = sub.gvk.Group, sub.gvk.Version
			}
			list.APIResources = append(list.APIResources, ar)
		}
	}
	for _, v := range g.virtual {
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: v.gvr.Resource, SingularName: v.singular,
			Namespaced: v.namespaced, Kind: v.kind, Verbs: v.discoveryVerbs()})
	}
	sort.SliceStable(list.APIResources, func(i, j int) bool {
		return strings.Split(list.APIResources[i].Name, "/")[0] < strings.Split(list.APIResources[j].Name, "/")[0]
	})
	return list
}

// storageVersionHash is upstream's hash of the group, version and kind
// rs's objects are stored at: a client sees it change when a storage
// migration is due.
func storageVersionHash(rs *resourceStore) string {
	gvk := rs.gvk
	if rs.custom != nil {
		gvk = rs.custom.storage.WithKind(gvk.Kind)
	}
	if sv := rs.res.StoredAs; sv != nil {
		gvk = sv.GroupVersion.WithKind(sv.Kind)
	}
	return discovery.StorageVersionHash(gvk.Group, gvk.Version, gvk.Kind)
}

// subresource is one subresource a resource serves.
type subresource struct {
	name  string
	gvk   schema.GroupVersionKind
	verbs metav1.Verbs
}

// objectSubresourceNames lists, in order, the resource's subresources
// other than status that take and return the whole object
// (pods/ephemeralcontainers, certificatesigningrequests/approval).
func objectSubresourceNames(rs *resourceStore) []string {
	names := make([]string, 0, len(rs.res.SpecSubresources)+len(rs.res.Subresources))
	for name := range rs.res.SpecSubresources {
		names = append(names, name)
	}
	for name := range rs.res.Subresources {
		if name != "status" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

func subresourcesOf(rs *resourceStore) []subresource {
	var subs []subresource
	rw := metav1.Verbs{"get", "patch", "update"}
	if rs.res.HasStatus {
		subs = append(subs, subresource{"status", rs.gvk, rw})
	}
	if rs.res.Scale != nil {
		subs = append(subs, subresource{"scale", schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}, rw})
	}
	for _, name := range objectSubresourceNames(rs) {
		subs = append(subs, subresource{name, rs.gvk, rw})
	}
	switch rs.res.Resource {
	case "pods":
		subs = append(subs,
			subresource{"binding", schema.GroupVersionKind{Version: "v1", Kind: "Binding"}, metav1.Verbs{"create"}},
			subresource{"eviction", schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}, metav1.Verbs{"create"}})
	case "namespaces":
		subs = append(subs, subresource{"finalize", rs.gvk, metav1.Verbs{"update"}})
	case "serviceaccounts":
		subs = append(subs, subresource{"token", authenticationv1.SchemeGroupVersion.WithKind("TokenRequest"), metav1.Verbs{"create"}})
	}
	return subs
}
