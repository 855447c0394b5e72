package apiserver

import (
	"bytes"
	"mime"
	"net/http"
	"sort"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// aggregatedMediaType is the aggregated discovery document kubectl and
// client-go ask /api and /apis for first (one request instead of one per group).
const aggregatedMediaType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// wantsAggregated is true when the Accept header prefers the aggregated
// discovery document over the plain one.
func wantsAggregated(r *http.Request) bool {
	for _, rng := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(rng))
		if err != nil {
			continue
		}
		if params["as"] == "APIGroupDiscoveryList" && params["g"] == "apidiscovery.k8s.io" && params["v"] == "v2" && mt == mediaJSON {
			return true
		}
		if mt == mediaJSON || mt == "*/*" {
			return false // a plain type ranks first
		}
	}
	return false
}

// serveAggregated answers /api (core) or /apis (every named group).
func (s *Server) serveAggregated(w http.ResponseWriter, core bool) {
	list := &apidiscoveryv2.APIGroupDiscoveryList{}
	list.APIVersion, list.Kind = apidiscoveryv2.SchemeGroupVersion.String(), "APIGroupDiscoveryList"
	index := map[string]int{}
	for _, g := range s.apiGroups() {
		if (g.gv.Group == "") != core {
			continue
		}
		version := apidiscoveryv2.APIVersionDiscovery{Version: g.gv.Version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
		if g.remote {
			// An extension server's, as it last answered; stale until then.
			version.Freshness = apidiscoveryv2.DiscoveryFreshnessStale
			if g.discovery != nil {
				version = *g.discovery
			}
		}
		for _, rs := range g.resources {
			version.Resources = append(version.Resources, resourceDiscovery(rs))
		}
		for _, v := range g.virtual {
			scope := apidiscoveryv2.ScopeCluster
			if v.namespaced {
				scope = apidiscoveryv2.ScopeNamespace
			}
			version.Resources = append(version.Resources, apidiscoveryv2.APIResourceDiscovery{
				Resource: v.gvr.Resource, SingularResource: v.singular, Scope: scope, Verbs: v.discoveryVerbs(),
				ResponseKind: &metav1.GroupVersionKind{Group: v.gvr.Group, Version: v.gvr.Version, Kind: v.kind}})
		}
		sort.Slice(version.Resources, func(i, j int) bool { return version.Resources[i].Resource < version.Resources[j].Resource })
		if i, ok := index[g.gv.Group]; ok {
			list.Items[i].Versions = append(list.Items[i].Versions, version)
			continue
		}
		index[g.gv.Group] = len(list.Items)
		group := apidiscoveryv2.APIGroupDiscovery{Versions: []apidiscoveryv2.APIVersionDiscovery{version}}
		group.Name = g.gv.Group
		list.Items = append(list.Items, group)
	}
	var buf bytes.Buffer
	if err := s.codecs.json.Encode(list, &buf); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", aggregatedMediaType)
	w.Header().Set("Vary", "Accept")
	w.WriteHeader(http.StatusOK)
	w.Write(buf.Bytes())
}

func resourceDiscovery(rs *resourceStore) apidiscoveryv2.APIResourceDiscovery {
	res := rs.res
	scope := apidiscoveryv2.ScopeCluster
	if res.Namespaced {
		scope = apidiscoveryv2.ScopeNamespace
	}
	kind := &metav1.GroupVersionKind{Group: rs.gvk.Group, Version: rs.gvk.Version, Kind: rs.gvk.Kind}
	d := apidiscoveryv2.APIResourceDiscovery{
		Resource: res.Resource, ResponseKind: kind, Scope: scope, SingularResource: res.SingularName,
		Verbs: allVerbs, ShortNames: res.ShortNames, Categories: res.Categories,
	}
	for _, sub := range subresourcesOf(rs) {
		d.Subresources = append(d.Subresources, apidiscoveryv2.APISubresourceDiscovery{
			Subresource:  sub.name,
			ResponseKind: &metav1.GroupVersionKind{Group: sub.gvk.Group, Version: sub.gvk.Version, Kind: sub.gvk.Kind},
			Verbs:        sub.verbs,
		})
	}
	return d
}
