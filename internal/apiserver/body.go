package apiserver

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"orch/internal/apiserver/registry/customresource"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// maxBodyBytes is the largest request body the server reads (as upstream: 3 MiB).
const maxBodyBytes = 3 * 1024 * 1024

// readBody reads the whole request body, refusing bodies over maxBodyBytes.
func readBody(r *http.Request) ([]byte, error) {
	data, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBodyBytes))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d bytes", maxBodyBytes))
	}
	if err != nil {
		return nil, badRequest("cannot read the request body: %v", err)
	}
	return data, nil
}

// fieldValidation reads the fieldValidation query parameter (default Warn,
// as upstream).
func fieldValidation(r *http.Request) (string, error) {
	v := r.URL.Query().Get("fieldValidation")
	switch v {
	case "":
		return metav1.FieldValidationWarn, nil
	case metav1.FieldValidationIgnore, metav1.FieldValidationWarn, metav1.FieldValidationStrict:
		return v, nil
	}
	return "", badRequest("fieldValidation must be one of Ignore, Warn or Strict, not %q", v)
}

// decodeObject decodes a request body into a new object of the resource,
// reporting unknown and duplicate fields per the fieldValidation directive:
// an error for Strict, warnings for Warn.
func (s *Server) decodeObject(r *http.Request, rs *resourceStore, data []byte) (runtime.Object, []string, error) {
	mediaType, info, err := s.codecs.decoderFor(r)
	if err != nil {
		return nil, nil, err
	}
	validation, err := fieldValidation(r)
	if err != nil {
		return nil, nil, err
	}
	if mediaType == mediaProtobuf && rs.custom != nil {
		return nil, nil, statusError(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
			"custom resources have no protobuf encoding: send application/json or application/yaml")
	}
	decoder := info.Serializer
	switch {
	case mediaType == mediaJSON && validation != metav1.FieldValidationIgnore:
		decoder = s.codecs.strictJSON
	case mediaType == mediaYAML && validation != metav1.FieldValidationIgnore:
		decoder = s.codecs.strictYAML
	}
	return s.decodeWith(decoder, rs, data, validation)
}

func (s *Server) decodeWith(decoder runtime.Decoder, rs *resourceStore, data []byte, validation string) (runtime.Object, []string, error) {
	if len(data) == 0 {
		return nil, nil, badRequest("the request body is empty: send a %s", rs.res.Kind)
	}
	obj, gvk, err := decoder.Decode(data, &rs.gvk, rs.res.New())
	var unknown []string // strict decoding errors: unknown and duplicate fields
	if err != nil {
		strict, isStrict := runtime.AsStrictDecodingError(err)
		if !isStrict {
			return nil, nil, badRequest("the request body cannot be decoded as a %s: %v", rs.gvk.Kind, err)
		}
		for _, e := range strict.Errors() {
			unknown = append(unknown, e.Error())
		}
	}
	if gvk != nil && *gvk != rs.gvk {
		return nil, nil, badRequest("the body is a %s but this endpoint takes %s (apiVersion %s)", gvk.String(), rs.gvk.Kind, rs.gvk.GroupVersion())
	}
	if rs.custom != nil {
		if err := customresource.CheckMetadata(obj); err != nil {
			return nil, nil, badRequest("%v", err)
		}
	}
	if rs.res.Prune != nil {
		for _, path := range rs.res.Prune(obj) {
			unknown = append(unknown, fmt.Sprintf("unknown field %q", path))
		}
	}
	switch {
	case len(unknown) == 0 || validation == metav1.FieldValidationIgnore:
		return obj, nil, nil
	case validation == metav1.FieldValidationStrict:
		return nil, nil, badRequest("strict decoding error: %s", strings.Join(unknown, ", "))
	}
	return obj, unknown, nil
}

// addWarnings sends warnings as Warning headers, as upstream does.
func addWarnings(w http.ResponseWriter, warnings []string) {
	for _, msg := range warnings {
		w.Header().Add("Warning", fmt.Sprintf("299 - %q", msg))
	}
}

// headerWarnings adds the warnings put in a request's context
// (k8s.io/apiserver/pkg/warning, as admission plugins do) to its response.
type headerWarnings struct{ w http.ResponseWriter }

func (h headerWarnings) AddWarning(_, text string) {
	if text != "" {
		addWarnings(h.w, []string{text})
	}
}

// decodeParams reads ListOptions, DeleteOptions and the like from the query.
func (s *Server) decodeParams(r *http.Request, into runtime.Object) error {
	return s.codecs.params.DecodeParameters(r.URL.Query(), schema.GroupVersion{Version: "v1"}, into)
}

// decodeInto decodes a request body of any supported content type into a
// fixed type (DeleteOptions, Binding, Eviction).
func (s *Server) decodeInto(r *http.Request, data []byte, into runtime.Object) error {
	_, info, err := s.codecs.decoderFor(r)
	if err != nil {
		return err
	}
	if _, _, err := info.Serializer.Decode(data, nil, into); err != nil {
		return badRequest("the body is not a valid %T: %v", into, err)
	}
	return nil
}
