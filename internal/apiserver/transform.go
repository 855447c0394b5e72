package apiserver

import (
	"bytes"
	"fmt"
	"net/http"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

var metaGV = metav1.SchemeGroupVersion.WithKind("").GroupVersion()

// transform turns obj (an object or a list) into what the client asked for
// with "as=": a Table, PartialObjectMetadata(List), or obj itself.
func (s *Server) transform(r *http.Request, rs *resourceStore, out output, obj runtime.Object, isList bool) (runtime.Object, error) {
	switch out.as {
	case "Table":
		return s.toTable(r, rs, obj, isList)
	case "PartialObjectMetadata", "PartialObjectMetadataList":
		return toPartial(obj, isList)
	}
	return obj, nil
}

func (s *Server) toTable(r *http.Request, rs *resourceStore, obj runtime.Object, isList bool) (runtime.Object, error) {
	includeObject := metav1.IncludeObjectPolicy(r.URL.Query().Get("includeObject"))
	if includeObject == "" {
		includeObject = metav1.IncludeMetadata
	}
	if includeObject != metav1.IncludeNone && includeObject != metav1.IncludeMetadata && includeObject != metav1.IncludeObject {
		return nil, badRequest("includeObject must be None, Metadata or Object, not %q", includeObject)
	}
	table := &metav1.Table{ColumnDefinitions: rs.columns()}
	table.APIVersion, table.Kind = "meta.k8s.io/v1", "Table"
	items := []runtime.Object{obj}
	if isList {
		var err error
		if items, err = meta.ExtractList(obj); err != nil {
			return nil, err
		}
		listMeta, _ := meta.ListAccessor(obj)
		table.ResourceVersion = listMeta.GetResourceVersion()
		table.Continue = listMeta.GetContinue()
		table.RemainingItemCount = listMeta.GetRemainingItemCount()
		if less := rs.res.RowsLess; less != nil {
			sort.SliceStable(items, func(i, j int) bool { return less(items[i], items[j]) })
		}
	} else if accessor, err := meta.Accessor(obj); err == nil {
		table.ResourceVersion = accessor.GetResourceVersion()
	}
	now := time.Now()
	table.Rows = make([]metav1.TableRow, 0, len(items))
	for _, item := range items {
		row := metav1.TableRow{Cells: rs.row(item, now)}
		embedded, err := s.embed(item, includeObject)
		if err != nil {
			return nil, err
		}
		row.Object = embedded
		table.Rows = append(table.Rows, row)
	}
	return table, nil
}

// embed encodes the object a table row carries as JSON.
func (s *Server) embed(obj runtime.Object, policy metav1.IncludeObjectPolicy) (runtime.RawExtension, error) {
	var target runtime.Object
	switch policy {
	case metav1.IncludeNone:
		return runtime.RawExtension{}, nil
	case metav1.IncludeMetadata:
		partial, err := partialOf(obj)
		if err != nil {
			return runtime.RawExtension{}, err
		}
		target = partial
	default:
		target = obj
	}
	var buf bytes.Buffer
	if err := s.codecs.json.Encode(target, &buf); err != nil {
		return runtime.RawExtension{}, err
	}
	return runtime.RawExtension{Raw: bytes.TrimSpace(buf.Bytes())}, nil
}

func (rs *resourceStore) columns() []metav1.TableColumnDefinition {
	if len(rs.res.Columns) > 0 {
		return rs.res.Columns
	}
	return []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
		{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
	}
}

func (rs *resourceStore) row(obj runtime.Object, now time.Time) []interface{} {
	if rs.res.Row != nil && len(rs.res.Columns) > 0 {
		return rs.res.Row(obj, now)
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return []interface{}{"", ""}
	}
	return []interface{}{accessor.GetName(), accessor.GetCreationTimestamp().UTC().Format(time.RFC3339)}
}

func partialOf(obj runtime.Object) (*metav1.PartialObjectMetadata, error) {
	partial := &metav1.PartialObjectMetadata{}
	partial.APIVersion, partial.Kind = metaGV.String(), "PartialObjectMetadata"
	if u, ok := obj.(*unstructured.Unstructured); ok {
		m, _, _ := unstructured.NestedMap(u.Object, "metadata")
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &partial.ObjectMeta); err != nil {
			return nil, fmt.Errorf("the metadata of %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		return partial, nil
	}
	withMeta, ok := obj.(metav1.ObjectMetaAccessor)
	if !ok {
		return nil, fmt.Errorf("%T has no object metadata", obj)
	}
	if om, ok := withMeta.GetObjectMeta().(*metav1.ObjectMeta); ok {
		partial.ObjectMeta = *om
	}
	return partial, nil
}

func toPartial(obj runtime.Object, isList bool) (runtime.Object, error) {
	if !isList {
		return partialOf(obj)
	}
	items, err := meta.ExtractList(obj)
	if err != nil {
		return nil, err
	}
	list := &metav1.PartialObjectMetadataList{Items: make([]metav1.PartialObjectMetadata, 0, len(items))}
	list.APIVersion, list.Kind = metaGV.String(), "PartialObjectMetadataList"
	listMeta, _ := meta.ListAccessor(obj)
	list.ResourceVersion = listMeta.GetResourceVersion()
	list.Continue = listMeta.GetContinue()
	list.RemainingItemCount = listMeta.GetRemainingItemCount()
	for _, item := range items {
		partial, err := partialOf(item)
		if err != nil {
			return nil, err
		}
		partial.TypeMeta = metav1.TypeMeta{}
		list.Items = append(list.Items, *partial)
	}
	return list, nil
}
