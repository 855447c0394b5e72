package apiserver

import (
	"net/http"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"orch/internal/apiserver/openapi"
)

// openAPIDocs builds the OpenAPI documents on first use: most processes
// (and every agent) never need them, and building costs time and memory.
type openAPIDocs struct {
	once sync.Once
	docs *openapi.Documents
	err  error
}

// builtin is the documents of the built-in resources.
func (s *Server) builtinOpenAPI() (*openapi.Documents, error) {
	s.openapi.once.Do(func() { s.openapi.docs, s.openapi.err = openapi.Build(s.openAPIResources()) })
	return s.openapi.docs, s.openapi.err
}

func (s *Server) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	docs, err := s.builtinOpenAPI()
	if err != nil {
		s.respondError(w, r, err, schema.GroupResource{}, "")
		return
	}
	s.custom.openAPI(docs).ServeHTTP(w, r)
}

func (s *Server) openAPIResources() []openapi.Resource {
	var out []openapi.Resource
	for _, g := range s.groups {
		for _, rs := range g.resources {
			res := rs.res
			var subs []string
			if res.HasStatus {
				subs = append(subs, "status")
			}
			if res.Scale != nil {
				subs = append(subs, "scale")
			}
			subs = append(subs, objectSubresourceNames(rs)...)
			out = append(out, openapi.Resource{
				GVK: rs.gvk, ListKind: res.Kind + "List", Resource: res.Resource, Namespaced: res.Namespaced,
				Type: reflect.TypeOf(res.New()).Elem(), ListType: reflect.TypeOf(res.NewList()).Elem(),
				Subresources: subs, Verbs: allVerbs,
			})
		}
	}
	return out
}
