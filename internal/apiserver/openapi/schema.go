package openapi

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"
)

// marker is what the comments of a type or field say that reflection cannot
// see (see markers_generated.go).
type marker struct {
	doc      string   // description, for types without a SwaggerDoc method
	listType string   // +listType → x-kubernetes-list-type
	mapKeys  []string // +listMapKey → x-kubernetes-list-map-keys
	mapType  string   // +mapType / +structType → x-kubernetes-map-type
	optional bool     // +optional on a field without omitempty
	required bool     // +required on a field with omitempty
	enum     []string // values of a +enum string type
	enumDoc  string   // their descriptions, added to the descriptions of fields of the type
}

// object is one JSON object of a document; encoding/json sorts its keys.
type object = map[string]any

// schemas turns Go types into the schemas of one OpenAPI version. v2 and v3
// differ in the $ref prefix, in defaults (v3 only), in how a $ref with
// siblings is written (v3 wraps it in allOf) and in oneOf types (v3 only).
type schemas struct {
	v3    bool
	defs  map[string]object       // definition name → schema
	names map[reflect.Type]string // Go type → definition name
	types map[string]reflect.Type // definition name → Go type
	gvks  map[string][]object     // definition name → x-kubernetes-group-version-kind
	err   error
}

func newSchemas(v3 bool, gvks map[string][]object) *schemas {
	return &schemas{v3: v3, defs: map[string]object{}, names: map[reflect.Type]string{}, types: map[string]reflect.Type{}, gvks: gvks}
}

func (s *schemas) ref(name string) object {
	if s.v3 {
		return object{"$ref": "#/components/schemas/" + name}
	}
	return object{"$ref": "#/definitions/" + name}
}

// define adds the definition of struct type t (and of every type it uses) and
// returns its name.
func (s *schemas) define(t reflect.Type) string {
	if name, ok := s.names[t]; ok {
		return name
	}
	name := definitionName(t)
	if other, ok := s.types[name]; ok && s.err == nil {
		s.err = fmt.Errorf("openapi: types %v and %v both have the definition name %q", other, t, name)
	}
	s.names[t], s.types[name] = name, t
	s.defs[name] = s.structSchema(t, name)
	return name
}

// definitionName is the upstream model name: "io.k8s.api.apps.v1.Deployment".
func definitionName(t reflect.Type) string {
	if n, ok := reflect.New(t).Elem().Interface().(interface{ OpenAPIModelName() string }); ok {
		return n.OpenAPIModelName()
	}
	parts := strings.Split(t.PkgPath(), "/")
	domain := strings.Split(parts[0], ".")
	for i, j := 0, len(domain)-1; i < j; i, j = i+1, j-1 {
		domain[i], domain[j] = domain[j], domain[i]
	}
	parts[0] = strings.Join(domain, ".")
	return strings.Join(parts, ".") + "." + t.Name()
}

// Types that choose their own OpenAPI type (metav1.Time, resource.Quantity,
// intstr.IntOrString, ...) implement these, like openapi-gen expects.
type (
	schemaTyper interface {
		OpenAPISchemaType() []string
		OpenAPISchemaFormat() string
	}
	oneOfTyper interface{ OpenAPIV3OneOfTypes() []string }
)

func (s *schemas) structSchema(t reflect.Type, name string) object {
	out := object{}
	if d := description(t, "", ""); d != "" {
		out["description"] = d
	}
	value := reflect.New(t).Elem().Interface()
	if typer, ok := value.(schemaTyper); ok {
		if oneOf, ok := value.(oneOfTyper); ok && s.v3 {
			var alts []any
			for _, typ := range oneOf.OpenAPIV3OneOfTypes() {
				alts = append(alts, object{"type": typ})
			}
			out["oneOf"] = alts
		} else if types := typer.OpenAPISchemaType(); len(types) > 0 {
			out["type"] = types[0]
		}
		if f := typer.OpenAPISchemaFormat(); f != "" {
			out["format"] = f
		}
		return out
	}
	out["type"] = "object"
	props := object{}
	var required []string
	s.members(t, props, &required)
	if len(props) > 0 {
		out["properties"] = props
	}
	if len(required) > 0 {
		out["required"] = required
	}
	if m := markerFor(t, ""); m.mapType != "" {
		out["x-kubernetes-map-type"] = m.mapType
	}
	if gvks := s.gvks[name]; len(gvks) > 0 {
		list := make([]any, len(gvks))
		for i, g := range gvks {
			list[i] = g
		}
		out["x-kubernetes-group-version-kind"] = list
	}
	return out
}

// members adds the JSON fields of struct t to props, flattening inline members.
func (s *schemas) members(t reflect.Type, props object, required *[]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, hasTag := f.Tag.Lookup("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && name == "" && (hasTag || deref(f.Type).Kind() == reflect.Struct) {
			s.members(deref(f.Type), props, required)
			continue
		}
		if name == "" {
			name = f.Name
		}
		omitempty := strings.Contains(","+opts+",", ",omitempty,")
		m := markerFor(t, f.Name)
		if m.required || (!m.optional && !omitempty) {
			*required = append(*required, name)
		}
		props[name] = s.field(f, m, description(t, f.Name, name), omitempty, strings.Contains(","+opts+",", ",string,"))
	}
}

func (s *schemas) field(f reflect.StructField, m marker, desc string, omitempty, asString bool) object {
	var out object
	if asString {
		out = object{"type": "string"}
	} else {
		out = s.typeSchema(f.Type)
		if enum := markerFor(deref(f.Type), ""); len(enum.enum) > 0 {
			desc = strings.TrimSpace(desc + "\n\n" + enum.enumDoc)
		}
	}
	if desc != "" {
		out["description"] = desc
	}
	if s.v3 && !asString {
		if d := enforcedDefault(f.Type, omitempty); d != nil {
			out["default"] = d
		}
	}
	if v := f.Tag.Get("patchStrategy"); v != "" {
		out["x-kubernetes-patch-strategy"] = v
	}
	if v := f.Tag.Get("patchMergeKey"); v != "" {
		out["x-kubernetes-patch-merge-key"] = v
	}
	if m.listType != "" {
		out["x-kubernetes-list-type"] = m.listType
	}
	if len(m.mapKeys) > 0 {
		out["x-kubernetes-list-map-keys"] = m.mapKeys
	}
	if m.mapType != "" {
		out["x-kubernetes-map-type"] = m.mapType
	}
	return s.wrapRef(out)
}

// element is the schema of a slice item or map value.
func (s *schemas) element(t reflect.Type) object {
	out := s.typeSchema(t)
	if s.v3 {
		if d := enforcedDefault(t, false); d != nil {
			out["default"] = d
		}
	}
	return s.wrapRef(out)
}

// wrapRef puts a $ref that has siblings into allOf in v3, where siblings of
// $ref are ignored; v2 documents keep them side by side as upstream does.
func (s *schemas) wrapRef(out object) object {
	if ref, ok := out["$ref"]; ok && s.v3 && len(out) > 1 {
		delete(out, "$ref")
		out["allOf"] = []any{object{"$ref": ref}}
	}
	return out
}

var timeType = reflect.TypeOf(time.Time{})

// typeSchema returns a fresh schema for t: a $ref for named structs, inline otherwise.
func (s *schemas) typeSchema(t reflect.Type) object {
	t = deref(t)
	switch t.Kind() {
	case reflect.Struct:
		if t == timeType {
			return object{"type": "string", "format": "date-time"}
		}
		if t.Name() == "" {
			return s.structSchema(t, "")
		}
		return s.ref(s.define(t))
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Kind() == reflect.Slice {
			return object{"type": "string", "format": "byte"}
		}
		return object{"type": "array", "items": s.element(t.Elem())}
	case reflect.Map:
		if t.Key().Kind() != reflect.String && s.err == nil {
			s.err = fmt.Errorf("openapi: map %v has keys that are not strings", t)
		}
		return object{"type": "object", "additionalProperties": s.element(t.Elem())}
	case reflect.Interface:
		return object{}
	case reflect.String:
		if enum := markerFor(t, "").enum; len(enum) > 0 {
			return object{"type": "string", "enum": enum}
		}
		return object{"type": "string"}
	case reflect.Bool:
		return object{"type": "boolean"}
	case reflect.Float32:
		return object{"type": "number", "format": "float"}
	case reflect.Float64:
		return object{"type": "number", "format": "double"}
	case reflect.Int8, reflect.Uint8:
		return object{"type": "integer", "format": "byte"}
	case reflect.Int, reflect.Int16, reflect.Int32, reflect.Uint, reflect.Uint16:
		return object{"type": "integer", "format": "int32"}
	case reflect.Int64, reflect.Uint32, reflect.Uint64:
		return object{"type": "integer", "format": "int64"}
	}
	if s.err == nil {
		s.err = fmt.Errorf("openapi: cannot describe Go type %v", t)
	}
	return object{}
}

// enforcedDefault is the default upstream writes into v3 schemas for a value
// that is always present: {} for structs, the zero value for scalars that are
// not omitempty, nothing for pointers, slices, maps and custom JSON types.
func enforcedDefault(t reflect.Type, omitempty bool) any {
	if _, ok := reflect.PointerTo(t).MethodByName("UnmarshalJSON"); ok {
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Array, reflect.Interface:
		return nil
	case reflect.Struct:
		if t.NumField() == 1 && t.Field(0).Anonymous {
			return enforcedDefault(t.Field(0).Type, omitempty)
		}
		return object{}
	}
	if omitempty {
		return nil
	}
	switch t.Kind() {
	case reflect.String:
		return ""
	case reflect.Bool:
		return false
	default:
		return 0
	}
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// description returns the doc of struct t (field "") or of one of its fields,
// from t's SwaggerDoc method or, for the few types without one (metav1.Time,
// resource.Quantity, ...), from their comments.
func description(t reflect.Type, field, jsonName string) string {
	if d, ok := reflect.New(t).Interface().(interface{ SwaggerDoc() map[string]string }); ok {
		return d.SwaggerDoc()[jsonName]
	}
	return markerFor(t, field).doc
}

// markerFor returns the comment markers of type t (field "") or of one of its fields.
func markerFor(t reflect.Type, field string) marker {
	key := t.PkgPath() + "." + t.Name()
	if field != "" {
		key += "." + field
	}
	return commentMarkers[key]
}

// refs calls fn with the name of every definition that schema v refers to.
func refs(v any, prefix string, fn func(string)) {
	switch v := v.(type) {
	case object:
		for k, e := range v {
			if r, ok := e.(string); ok && k == "$ref" {
				fn(strings.TrimPrefix(r, prefix))
				continue
			}
			refs(e, prefix, fn)
		}
	case []any:
		for _, e := range v {
			refs(e, prefix, fn)
		}
	}
}

// closure returns the definitions reachable from roots, sorted.
func closure(defs map[string]object, roots []string, prefix string) []string {
	seen := map[string]bool{}
	var visit func(string)
	visit = func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		refs(defs[name], prefix, visit)
	}
	for _, r := range roots {
		visit(r)
	}
	out := make([]string, 0, len(seen))
	for name := range seen {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}
