package apiserver

import (
	"bytes"
	"context"
	"fmt"
	"mime"
	"net/http"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apiserver/pkg/audit"
	"sigs.k8s.io/yaml"
)

// patchRequest is what a PATCH carries.
type patchRequest struct {
	writeRequest
	patchType  types.PatchType
	validation string
	data       []byte
	force      bool
}

func (s *Server) readPatch(r *http.Request) (patchRequest, error) {
	var p patchRequest
	var err error
	if p.writeRequest, err = parseWriteRequest(r); err != nil {
		return p, err
	}
	if p.patchType, err = patchTypeOf(r); err != nil {
		return p, err
	}
	if p.validation, err = fieldValidation(r); err != nil {
		return p, err
	}
	if p.data, err = readBody(r); err != nil {
		return p, err
	}
	if auditing(r.Context()) {
		audit.LogRequestPatch(r.Context(), p.data)
	}
	if p.patchType == types.ApplyYAMLPatchType && r.URL.Query().Get("fieldManager") == "" {
		return p, badRequest("fieldManager is required for apply requests")
	}
	p.force = isTrue(r.URL.Query().Get("force"))
	// Server-side apply records its own managed fields.
	p.keepManagedFields = p.patchType == types.ApplyYAMLPatchType
	return p, nil
}

func (s *Server) patch(w http.ResponseWriter, r *http.Request, info requestInfo, rs *resourceStore, subresource string) {
	p, err := s.readPatch(r)
	if err == nil && p.patchType == types.StrategicMergePatchType && rs.custom != nil {
		// As upstream: custom resources have no patch strategies.
		err = statusError(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
			"the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml")
	}
	var duplicates []string
	if err == nil {
		duplicates, err = applyDuplicates(p)
	}
	if err != nil {
		s.respondError(w, r, err, rs.gr, info.Name)
		return
	}
	addWarnings(w, duplicates)
	wr, patchType, data := p.writeRequest, p.patchType, p.data
	var warnings []string
	mutate := func(old runtime.Object) (runtime.Object, error) {
		obj, warns, err := s.applyPatch(rs, subresource, patchType, old, data, p.validation, wr.manager, p.force)
		warnings = warns
		return obj, err
	}
	unconditional := !bytes.Contains(data, []byte(`"resourceVersion"`)) && !bytes.Contains(data, []byte("resourceVersion:"))
	code := http.StatusOK
	result, err := s.retryUpdate(r.Context(), rs, info, unconditional, mutate, subresource, wr)
	if isNotFound(err) && patchType == types.ApplyYAMLPatchType && subresource == "" {
		result, err = s.applyCreate(r.Context(), rs, info, data, wr, p.force)
		code = http.StatusCreated
	}
	addWarnings(w, warnings)
	if err != nil {
		s.respondError(w, r, err, rs.gr, info.Name)
		return
	}
	s.respond(w, r, code, result)
}

func patchTypeOf(r *http.Request) (types.PatchType, error) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch pt := types.PatchType(mt); pt {
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType, types.ApplyYAMLPatchType:
		return pt, nil
	case types.ApplyCBORPatchType:
		return "", statusError(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType, "CBOR apply patches are not supported: send application/apply-patch+yaml")
	}
	return "", statusError(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
		"the patch content type "+r.Header.Get("Content-Type")+" is not supported: use application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json or application/apply-patch+yaml")
}

// applyPatch returns the stored object with the patch applied (an apply
// patch owned as a write to subresource).
func (s *Server) applyPatch(rs *resourceStore, subresource string, pt types.PatchType, old runtime.Object, patch []byte, validation, manager string, force bool) (runtime.Object, []string, error) {
	if pt == types.ApplyYAMLPatchType {
		applied, err := decodeApply(patch)
		if err != nil {
			return nil, nil, err
		}
		obj, err := s.apply(rs, subresource, old, applied, manager, force)
		return obj, nil, err
	}
	var buf bytes.Buffer
	if err := s.codecs.json.Encode(old, &buf); err != nil {
		return nil, nil, err
	}
	current := buf.Bytes()
	var patched []byte
	var err error
	switch pt {
	case types.JSONPatchType:
		var p jsonpatch.Patch
		if p, err = jsonpatch.DecodePatch(patch); err != nil {
			return nil, nil, badRequest("the JSON patch is not valid: %v", err)
		}
		if patched, err = p.Apply(current); err != nil {
			return nil, nil, unprocessable("the JSON patch cannot be applied: %v", err)
		}
	case types.MergePatchType:
		if patched, err = jsonpatch.MergePatch(current, patch); err != nil {
			return nil, nil, badRequest("the merge patch is not valid JSON: %v", err)
		}
	case types.StrategicMergePatchType:
		if patched, err = strategicpatch.StrategicMergePatch(current, patch, rs.res.New()); err != nil {
			return nil, nil, badRequest("the strategic merge patch cannot be applied: %v", err)
		}
	}
	decoder := runtime.Decoder(s.codecs.strictJSON)
	if validation == metav1.FieldValidationIgnore {
		decoder = s.codecs.json
	}
	return s.decodeWith(decoder, rs, patched, validation)
}

// applyCreate is server-side apply of an object that does not exist yet.
func (s *Server) applyCreate(ctx context.Context, rs *resourceStore, info requestInfo, patch []byte, wr writeRequest, force bool) (runtime.Object, error) {
	applied, err := decodeApply(patch)
	if err != nil {
		return nil, err
	}
	empty := rs.res.New()
	accessor := mustAccessor(empty)
	accessor.SetName(info.Name)
	accessor.SetNamespace(info.Namespace)
	empty.GetObjectKind().SetGroupVersionKind(rs.gvk)
	obj, err := s.apply(rs, "", empty, applied, wr.manager, force)
	if err != nil {
		return nil, err
	}
	return s.createObject(ctx, rs, info.Namespace, obj, wr)
}

// apply merges an apply configuration into live. A custom resource's
// schema may keep unknown fields out of the field manager's types only
// where it is structural, so what it does not know is dropped afterwards.
func (s *Server) apply(rs *resourceStore, subresource string, live runtime.Object, applied *unstructured.Unstructured, manager string, force bool) (runtime.Object, error) {
	obj, err := s.fields.apply(rs, subresource, live, applied, manager, force)
	if err == nil && rs.res.Prune != nil {
		rs.res.Prune(obj)
	}
	return obj, err
}

// applyDuplicates is upstream's check of an apply patch for duplicate
// keys under fieldValidation Strict (an error) or Warn (a warning).
func applyDuplicates(p patchRequest) ([]string, error) {
	if p.patchType != types.ApplyYAMLPatchType || p.validation == metav1.FieldValidationIgnore {
		return nil, nil
	}
	if err := yaml.UnmarshalStrict(p.data, &map[string]any{}); err != nil {
		if p.validation == metav1.FieldValidationStrict {
			return nil, badRequest("error strict decoding YAML: %v", err)
		}
		return []string{err.Error()}, nil
	}
	return nil, nil
}

func decodeApply(patch []byte) (*unstructured.Unstructured, error) {
	var content map[string]interface{}
	if err := yaml.Unmarshal(patch, &content); err != nil {
		return nil, badRequest("the apply patch is not valid YAML or JSON: %v", err)
	}
	if content == nil {
		return nil, badRequest("the apply patch is empty")
	}
	return &unstructured.Unstructured{Object: content}, nil
}

func unprocessable(format string, args ...any) error {
	return statusError(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, fmt.Sprintf(format, args...))
}
