package customresource

import (
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// content is the JSON of a custom resource, or nil for any other object.
func content(obj runtime.Object) map[string]interface{} {
	if u, ok := obj.(runtime.Unstructured); ok {
		return u.UnstructuredContent()
	}
	return nil
}

// defaults applies the schema's defaults, as upstream does to every custom
// resource it decodes from a request or from storage.
func (s *strategy) defaults(obj runtime.Object) {
	if c := content(obj); c != nil {
		defaulting.Default(c, s.structural)
	}
}

// prune drops what the schema does not know, as upstream's decoder does:
// unknown fields outside x-kubernetes-preserve-unknown-fields subtrees,
// unknown metadata fields at the root and in embedded resources, and nulls
// where the schema allows none and has no default. It returns the paths of
// the unknown fields ("spec.foo", "metadata.bar", "spec.list[0].baz"),
// sorted within each part. Malformed metadata fields (labels that are not
// a map of strings) are dropped, as upstream does reading from storage; a
// request body should be refused first with CheckMetadata.
func (s *strategy) prune(obj runtime.Object) []string {
	c := content(obj)
	if c == nil {
		return nil
	}
	// apiVersion, kind and metadata are not in the schema: keep them aside
	// and put them back as upstream does, metadata as a clean ObjectMeta.
	apiVersion, hasAPIVersion := c["apiVersion"].(string)
	kind, hasKind := c["kind"].(string)
	meta, hasMeta, paths, err := objectmeta.GetObjectMetaWithOptions(c, objectmeta.ObjectMetaOptions{
		DropMalformedFields:     true,
		ReturnUnknownFieldPaths: true,
	})
	if err != nil {
		// metadata is not even an object: nothing in it can be kept.
		delete(c, "metadata")
	}
	// Objects of another group or kind (which validation refuses) are left
	// as they are, as upstream leaves them to the decoder's other types.
	if gv, err := schema.ParseGroupVersion(apiVersion); err == nil && gv.Group == s.gvk.Group && kind == s.gvk.Kind {
		if !s.preserveUnknownFields {
			paths = append(paths, pruning.PruneWithOptions(c, s.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
			defaulting.PruneNonNullableNullsWithoutDefaults(c, s.structural)
		}
		_, embedded := objectmeta.CoerceWithOptions(nil, c, s.structural, false, objectmeta.CoerceOptions{
			DropInvalidFields:       true,
			ReturnUnknownFieldPaths: true,
		})
		paths = append(paths, embedded...)
	}
	if hasKind {
		c["kind"] = kind
	}
	if hasAPIVersion {
		c["apiVersion"] = apiVersion
	}
	if hasMeta && meta != nil {
		if objectmeta.SetObjectMeta(c, meta) != nil {
			delete(c, "metadata")
		}
	}
	return paths
}

// CheckMetadata returns the error upstream's decoder refuses a request body
// with when its metadata is not a valid ObjectMeta (labels that are not a
// map of strings, a name that is a number): the handler should answer 400
// with it before Prune, which would drop such fields silently.
func CheckMetadata(obj runtime.Object) error {
	c := content(obj)
	if c == nil {
		return nil
	}
	_, _, err := objectmeta.GetObjectMeta(c, false)
	return err
}
