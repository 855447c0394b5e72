package customresource

import (
	"bytes"
	"encoding/json"
	"reflect"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/jsonpath"

	"orch/internal/apiserver/registry"
)

var metadataDescriptions = metav1.ObjectMeta{}.SwaggerDoc()

// table is the server-side table of additionalPrinterColumns: the name,
// then each column, whose cells come from its JSONPath.
type table struct {
	columns []metav1.TableColumnDefinition
	paths   []*jsonpath.JSONPath // one per column after the name
}

// newTable builds the table for a version's printer columns; a version
// without any gets upstream's default, the age. As upstream, a column whose
// JSONPath does not parse ends the table (CRD validation refuses those).
func newTable(columns []apiextensionsv1.CustomResourceColumnDefinition) *table {
	if len(columns) == 0 {
		columns = []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Age", Type: "date", Description: metadataDescriptions["creationTimestamp"], JSONPath: ".metadata.creationTimestamp"},
		}
	}
	t := &table{columns: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: metadataDescriptions["name"]},
	}}
	for _, col := range columns {
		path := jsonpath.New(col.Name)
		if err := path.Parse("{" + col.JSONPath + "}"); err != nil {
			break
		}
		path.AllowMissingKeys(true)
		description := col.Description
		if description == "" {
			description = "Custom resource definition column (in JSONPath format): " + col.JSONPath
		}
		t.paths = append(t.paths, path)
		t.columns = append(t.columns, metav1.TableColumnDefinition{
			Name:        col.Name,
			Type:        col.Type,
			Format:      col.Format,
			Description: description,
			Priority:    col.Priority,
		})
	}
	return t
}

// row returns the cells of obj: its name, then each column's value typed
// as the column says (nil when absent or of another type); a date column
// shows the age at now.
func (t *table) row(obj runtime.Object, now time.Time) []interface{} {
	cells := make([]interface{}, 1, len(t.columns))
	if accessor, err := meta.Accessor(obj); err == nil {
		cells[0] = accessor.GetName()
	}
	c := content(obj)
	for i, path := range t.paths {
		cells = append(cells, cell(path, t.columns[i+1].Type, c, now))
	}
	return cells
}

func cell(path *jsonpath.JSONPath, columnType string, data map[string]interface{}, now time.Time) interface{} {
	results, err := path.FindResults(data)
	if err != nil || len(results) == 0 || len(results[0]) == 0 {
		return nil
	}
	value := results[0][0].Interface()
	if value == nil {
		return nil
	}
	switch columnType {
	case "string":
		// Printed as kubectl's JSONPath prints it (objects as JSON).
		var buf bytes.Buffer
		if err := path.PrintResults(&buf, []reflect.Value{reflect.ValueOf(value)}); err != nil {
			return nil
		}
		return buf.String()
	case "integer":
		switch v := value.(type) {
		case int64:
			return v
		case float64:
			return int64(v)
		case json.Number:
			if i, err := v.Int64(); err == nil {
				return i
			}
		}
	case "number":
		switch v := value.(type) {
		case int64:
			return float64(v)
		case float64:
			return v
		case json.Number:
			if f, err := v.Float64(); err == nil {
				return f
			}
		}
	case "boolean":
		if b, ok := value.(bool); ok {
			return b
		}
	case "date":
		if s, ok := value.(string); ok {
			var t metav1.Time
			if err := t.UnmarshalQueryParameter(s); err != nil {
				return "<invalid>"
			}
			return registry.Age(t, now)
		}
	}
	return nil
}
