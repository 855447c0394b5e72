package apiserver

import (
	"bytes"
	"net/http"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// respond writes obj with the given code in the media type the client accepts.
func (s *Server) respond(w http.ResponseWriter, r *http.Request, code int, obj runtime.Object) {
	out, err := s.codecs.negotiateOutput(r)
	if err != nil {
		out = output{mediaType: mediaJSON}
		out.info, _ = s.codecs.serializerFor(mediaJSON)
	}
	s.setKind(obj)
	s.auditResponseObject(r.Context(), obj)
	s.write(w, out, code, obj)
}

// write encodes obj into the body; objects without apiVersion/kind get the
// ones the scheme knows them by.
func (s *Server) write(w http.ResponseWriter, out output, code int, obj runtime.Object) {
	s.setKind(obj)
	var buf bytes.Buffer
	if err := out.info.Serializer.Encode(obj, &buf); err != nil {
		s.log.Error("cannot encode a response", "kind", obj.GetObjectKind().GroupVersionKind().Kind, "err", err)
		http.Error(w, "cannot encode the response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", out.mediaType)
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(code)
	w.Write(buf.Bytes())
}

func (s *Server) setKind(obj runtime.Object) {
	if !obj.GetObjectKind().GroupVersionKind().Empty() {
		return
	}
	if status, ok := obj.(*metav1.Status); ok {
		status.APIVersion, status.Kind = "v1", "Status"
		return
	}
	kinds, _, err := s.codecs.scheme.ObjectKinds(obj)
	if err == nil && len(kinds) > 0 {
		obj.GetObjectKind().SetGroupVersionKind(preferredKind(kinds))
	}
}

// preferredKind picks the core v1 registration of types that the scheme
// knows in many group versions (Status, WatchEvent, APIResourceList...).
func preferredKind(kinds []schema.GroupVersionKind) schema.GroupVersionKind {
	for _, k := range kinds {
		if k.Group == "" && k.Version == "v1" {
			return k
		}
	}
	return kinds[0]
}

// respondError writes err as a metav1.Status.
func (s *Server) respondError(w http.ResponseWriter, r *http.Request, err error, gr schema.GroupResource, name string) {
	status := toStatus(err, gr, name)
	if status.Code >= 500 && status.Code != http.StatusNotImplemented {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if status.Details != nil && status.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(status.Details.RetryAfterSeconds)))
	}
	s.respond(w, r, int(status.Code), status)
}
