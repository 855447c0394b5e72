package customresource

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/jsonpath"
)

// selectableField is one of spec.versions[].selectableFields: its name in
// field selectors ("spec.color") and its parsed JSONPath.
type selectableField struct {
	name string
	path *jsonpath.JSONPath
}

// newSelectableFields returns the SelectableFields function of a version,
// or nil when it declares none. Every declared field is in the set, empty
// when the object has no value there (or one a JSONPath cannot reach), so
// that selectors may name it for any object.
func newSelectableFields(declared []apiextensionsv1.SelectableField) func(runtime.Object) fields.Set {
	if len(declared) == 0 {
		return nil
	}
	selectable := make([]selectableField, 0, len(declared))
	for _, f := range declared {
		sf := selectableField{name: strings.TrimPrefix(f.JSONPath, ".")}
		path := jsonpath.New("selectableField")
		path.AllowMissingKeys(true)
		if err := path.Parse("{" + f.JSONPath + "}"); err == nil {
			sf.path = path
		}
		selectable = append(selectable, sf)
	}
	return func(obj runtime.Object) fields.Set {
		set := make(fields.Set, len(selectable))
		c := content(obj)
		for _, sf := range selectable {
			set[sf.name] = fieldValue(sf.path, c)
		}
		return set
	}
}

// fieldValue is the string form of the single value path finds in c, or "".
func fieldValue(path *jsonpath.JSONPath, c map[string]interface{}) string {
	if path == nil || c == nil {
		return ""
	}
	results, err := path.FindResults(c)
	if err != nil || len(results) != 1 || len(results[0]) != 1 {
		return ""
	}
	value := results[0][0].Interface()
	if value == nil {
		return ""
	}
	return fmt.Sprint(value)
}
