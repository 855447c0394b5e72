package apiserver

import (
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// serveResource dispatches a resource request by verb and subresource.
func (s *Server) serveResource(w http.ResponseWriter, r *http.Request, info requestInfo, rs *resourceStore) {
	if rs.res.Namespaced && info.Namespace == "" && info.Verb != "list" && info.Verb != "watch" {
		s.respondError(w, r, notFoundPath(), schema.GroupResource{}, "")
		return
	}
	if !rs.res.Namespaced && info.Namespace != "" {
		s.respondError(w, r, notFoundPath(), schema.GroupResource{}, "")
		return
	}
	if info.Subresource != "" {
		s.serveSubresource(w, r, info, rs)
		return
	}
	switch info.Verb {
	case "get":
		s.get(w, r, info, rs)
	case "list":
		s.list(w, r, info, rs)
	case "watch":
		s.watch(w, r, info, rs)
	case "create":
		if info.Name != "" {
			s.respondError(w, r, apierrors.NewMethodNotSupported(rs.gr, "create"), rs.gr, info.Name)
			return
		}
		s.create(w, r, info, rs)
	case "update", "patch":
		if info.Name == "" {
			s.respondError(w, r, apierrors.NewMethodNotSupported(rs.gr, info.Verb), rs.gr, "")
			return
		}
		if info.Verb == "update" {
			s.update(w, r, info, rs, "")
		} else {
			s.patch(w, r, info, rs, "")
		}
	case "delete":
		s.delete(w, r, info, rs)
	case "deletecollection":
		s.deleteCollection(w, r, info, rs)
	default:
		s.respondError(w, r, apierrors.NewMethodNotSupported(rs.gr, r.Method), rs.gr, info.Name)
	}
}

func notFoundPath() error {
	return apierrors.NewGenericServerResponse(http.StatusNotFound, "get", schema.GroupResource{}, "", "", 0, false)
}
