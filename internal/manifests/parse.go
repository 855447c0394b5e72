package manifests

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// ErrInvalid marks a manifest that cannot be parsed into objects.
var ErrInvalid = errors.New("invalid manifest")

// Parse turns the contents of one manifest file into the objects it holds,
// in file order: YAML documents separated by "---" lines, or JSON, and the
// items of List kinds (v1 List, ConfigMapList, …). name is the file name
// used in errors. An error (wrapping ErrInvalid) names the file and the
// line of the document at fault; then no object of the file is returned,
// so nothing of a broken file is half-applied.
func Parse(name string, data []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for _, doc := range splitDocuments(data) {
		got, err := parseDocument(doc)
		if err != nil {
			return nil, fmt.Errorf("%w: %s:%d: %v", ErrInvalid, name, err.line, err.msg)
		}
		objs = append(objs, got...)
	}
	return objs, nil
}

// document is one YAML document and the line (from 1) it starts on.
type document struct {
	data []byte
	line int
}

// splitDocuments splits data at "---" lines (a line that starts with
// "---" followed by nothing but blanks or a comment), as apimachinery's
// YAMLReader does, and remembers where each document starts.
func splitDocuments(data []byte) []document {
	var docs []document
	cur := document{line: 1}
	for i, line := range bytes.SplitAfter(data, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("---")); ok {
			if t := strings.TrimSpace(string(rest)); t == "" || strings.HasPrefix(t, "#") {
				docs = append(docs, cur)
				cur = document{line: i + 2}
				continue
			}
		}
		cur.data = append(cur.data, line...)
	}
	return append(docs, cur)
}

// parseError is an error at a line of the file.
type parseError struct {
	line int
	msg  string
}

// yamlLine finds the document-relative line in YAML parser errors.
var yamlLine = regexp.MustCompile(`(?:yaml: )?line (\d+): `)

func parseDocument(doc document) ([]*unstructured.Unstructured, *parseError) {
	if len(bytes.TrimSpace(doc.data)) == 0 {
		return nil, nil
	}
	js, err := yaml.YAMLToJSON(doc.data)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
		line := doc.line
		if m := yamlLine.FindStringSubmatchIndex(msg); m != nil {
			n, _ := strconv.Atoi(msg[m[2]:m[3]])
			line = doc.line + n - 1
			msg = msg[:m[0]] + msg[m[1]:]
		}
		return nil, &parseError{line, "not valid YAML or JSON: " + strings.TrimPrefix(msg, "yaml: ")}
	}
	var value any
	if err := utiljson.Unmarshal(js, &value); err != nil {
		return nil, &parseError{doc.line, "not valid YAML or JSON: " + err.Error()}
	}
	if value == nil {
		return nil, nil // only comments
	}
	m, ok := value.(map[string]any)
	if !ok {
		return nil, &parseError{doc.line, fmt.Sprintf("the document is a %s, not an object with apiVersion and kind", typeName(value))}
	}
	obj, err := object(m)
	if err != nil {
		return nil, &parseError{doc.line, err.Error()}
	}
	if !obj.IsList() {
		return []*unstructured.Unstructured{obj}, nil
	}
	items, _ := m["items"].([]any)
	objs := make([]*unstructured.Unstructured, 0, len(items))
	for i, item := range items {
		im, ok := item.(map[string]any)
		if !ok {
			return nil, &parseError{doc.line, fmt.Sprintf("%s item %d is a %s, not an object", obj.GetKind(), i, typeName(item))}
		}
		o, err := object(im)
		if err != nil {
			return nil, &parseError{doc.line, fmt.Sprintf("%s item %d: %v", obj.GetKind(), i, err)}
		}
		if o.IsList() {
			return nil, &parseError{doc.line, fmt.Sprintf("%s item %d is itself a list", obj.GetKind(), i)}
		}
		objs = append(objs, o)
	}
	return objs, nil
}

// object checks that m is an object that can be applied.
func object(m map[string]any) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{Object: m}
	apiVersion, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	switch {
	case apiVersion == "":
		return nil, errors.New("the object has no apiVersion (e.g. apiVersion: v1)")
	case kind == "":
		return nil, errors.New("the object has no kind (e.g. kind: ConfigMap)")
	case obj.IsList():
		return obj, nil
	}
	md, ok := m["metadata"].(map[string]any)
	if !ok && m["metadata"] != nil {
		return nil, fmt.Errorf("%s: metadata is not an object", kind)
	}
	if name, ok := md["name"]; ok && name != nil {
		if _, ok := name.(string); !ok {
			return nil, fmt.Errorf("%s: metadata.name %v is a %s, not a string (quote it)", kind, name, typeName(name))
		}
	}
	if name, _ := md["name"].(string); name == "" {
		return nil, fmt.Errorf("%s has no metadata.name (every applied object needs one; generateName cannot be applied)", kind)
	}
	if ns, ok := md["namespace"]; ok && ns != nil {
		if _, ok := ns.(string); !ok {
			return nil, fmt.Errorf("%s %q: metadata.namespace is not a string", kind, md["name"])
		}
	}
	return obj, nil
}

func typeName(v any) string {
	switch v.(type) {
	case []any:
		return "list"
	case string:
		return "string"
	case bool:
		return "boolean"
	case int64, float64:
		return "number"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}
