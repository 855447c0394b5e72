// Command markergen writes markers_generated.go for package openapi: what the
// comments of the Kubernetes API types say that reflection cannot see. That is
// the markers openapi-gen reads (+listType, +listMapKey, +mapType, +structType,
// +optional, +required, +enum with the values and docs of the enum constants)
// and the docs of the few types without a SwaggerDoc method (metav1.Time,
// resource.Quantity, intstr.IntOrString, runtime.RawExtension, ...).
//
// It reads the Go sources of k8s.io/api and k8s.io/apimachinery from the module
// cache (the versions in go.mod), so the table always matches the types the
// binary serves. Run it with `go generate ./internal/apiserver/openapi/`.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// apimachineryPackages are the apimachinery packages whose types appear in API objects.
var apimachineryPackages = []string{
	"pkg/apis/meta/v1",
	"pkg/api/resource",
	"pkg/runtime",
	"pkg/util/intstr",
}

type entry struct {
	doc      string // description of a type without a SwaggerDoc method
	listType string
	mapKeys  []string
	mapType  string
	optional bool // +optional on a field without omitempty
	required bool // +required on a field with omitempty
	enum     []enumValue
}

type enumValue struct{ name, value, comment string }

func (e entry) empty() bool {
	return e.doc == "" && e.listType == "" && len(e.mapKeys) == 0 && e.mapType == "" && !e.optional && !e.required && len(e.enum) == 0
}

func main() {
	out := flag.String("o", "markers_generated.go", "output file")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "markergen:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	dirs := map[string]string{} // import path → directory
	versions := []string{}
	apiVersion := ""
	for _, mod := range []string{"k8s.io/api", "k8s.io/apimachinery"} {
		res, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}} {{.Version}}", mod).Output()
		if err != nil {
			return fmt.Errorf("go list -m %s: %w", mod, err)
		}
		dir, version, _ := strings.Cut(strings.TrimSpace(string(res)), " ")
		versions = append(versions, mod+" "+version)
		if mod == "k8s.io/api" {
			apiVersion = version
		}
		if mod == "k8s.io/apimachinery" {
			for _, p := range apimachineryPackages {
				dirs[mod+"/"+p] = filepath.Join(dir, p)
			}
			continue
		}
		err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "types.go" {
				return err
			}
			rel, _ := filepath.Rel(dir, filepath.Dir(path))
			dirs[mod+"/"+filepath.ToSlash(rel)] = filepath.Dir(path)
			return nil
		})
		if err != nil {
			return err
		}
	}

	entries := map[string]entry{}
	for pkg, dir := range dirs {
		if err := scan(pkg, dir, entries); err != nil {
			return err
		}
	}
	return write(out, apiVersion, versions, entries)
}

// typeDecl is one type declaration with its doc comment.
type typeDecl struct {
	spec *ast.TypeSpec
	doc  *ast.CommentGroup
}

// scan adds the entries of the package in dir to entries.
func scan(pkg, dir string, entries map[string]entry) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return err
	}
	fset := token.NewFileSet()
	var types []typeDecl
	var consts []*ast.GenDecl
	documented := map[string]bool{} // types with a SwaggerDoc method
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if id, ok := recvType(d); ok && d.Name.Name == "SwaggerDoc" {
					documented[id] = true
				}
			case *ast.GenDecl:
				if d.Tok == token.CONST {
					consts = append(consts, d)
				}
				for _, spec := range d.Specs {
					if ts, ok := spec.(*ast.TypeSpec); ok {
						doc := ts.Doc
						if doc == nil && len(d.Specs) == 1 {
							doc = d.Doc
						}
						types = append(types, typeDecl{ts, doc})
					}
				}
			}
		}
	}

	enums := map[string]*entry{} // +enum string types
	for _, td := range types {
		if id, ok := td.spec.Type.(*ast.Ident); ok && id.Name == "string" && commentTags(td.doc)["enum"] != nil {
			enums[td.spec.Name.Name] = &entry{}
		}
	}
	for _, gd := range consts {
		addEnumValues(gd, enums)
	}
	for name, e := range enums {
		if len(e.enum) > 0 {
			entries[pkg+"."+name] = *e
		}
	}

	for _, td := range types {
		st, ok := td.spec.Type.(*ast.StructType)
		if !ok || !td.spec.Name.IsExported() {
			continue
		}
		name := td.spec.Name.Name
		key := pkg + "." + name
		tags := commentTags(td.doc)
		e := entry{mapType: first(tags["structType"], tags["mapType"])}
		if !documented[name] {
			e.doc = description(td.doc)
		}
		if !e.empty() {
			entries[key] = e
		}
		for _, field := range st.Fields.List {
			if len(field.Names) == 0 || !field.Names[0].IsExported() {
				continue // embedded types carry their own markers
			}
			e := fieldEntry(field)
			if !documented[name] {
				e.doc = description(field.Doc)
			}
			if !e.empty() {
				entries[key+"."+field.Names[0].Name] = e
			}
		}
	}
	return nil
}

// recvType is the receiver type name of a method.
func recvType(fd *ast.FuncDecl) (string, bool) {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return "", false
	}
	t := fd.Recv.List[0].Type
	if star, ok := t.(*ast.StarExpr); ok {
		t = star.X
	}
	id, ok := t.(*ast.Ident)
	if !ok {
		return "", false
	}
	return id.Name, true
}

// addEnumValues adds the string constants of a const declaration to their enum types.
func addEnumValues(gd *ast.GenDecl, enums map[string]*entry) {
	for _, spec := range gd.Specs {
		vs := spec.(*ast.ValueSpec)
		typ, ok := vs.Type.(*ast.Ident)
		if !ok || enums[typ.Name] == nil || len(vs.Values) != len(vs.Names) {
			continue
		}
		doc := vs.Doc
		if doc == nil && len(gd.Specs) == 1 {
			doc = gd.Doc
		}
		comment := ""
		if doc != nil {
			comment = strings.Join(strings.Split(strings.TrimSuffix(doc.Text(), "\n"), "\n"), " ")
		}
		for i, name := range vs.Names {
			lit, ok := vs.Values[i].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				continue
			}
			value, _ := strconv.Unquote(lit.Value)
			e := enums[typ.Name]
			v := enumValue{name.Name, value, comment}
			found := false
			for j, old := range e.enum {
				if old.value == value {
					found = true
					// Like openapi-gen: keep the longer comment.
					if len(old.comment) < len(comment) || (len(old.comment) == len(comment) && old.comment > comment) {
						e.enum[j] = v
					}
				}
			}
			if !found {
				e.enum = append(e.enum, v)
			}
		}
	}
}

// enumDoc is the text openapi-gen adds to the description of an enum field.
func enumDoc(values []enumValue) string {
	var lines []string
	for _, v := range values {
		comment := strings.Join(strings.Fields(strings.TrimPrefix(strings.TrimSpace(v.comment), v.name)), " ")
		lines = append(lines, strings.TrimRight(fmt.Sprintf(" - `%q` %s", v.value, comment), " "))
	}
	sort.Strings(lines)
	return "Possible enum values:\n" + strings.Join(lines, "\n")
}

func fieldEntry(field *ast.Field) entry {
	tags := commentTags(field.Doc)
	omitempty := false
	if field.Tag != nil {
		raw, _ := strconv.Unquote(field.Tag.Value)
		_, opts, _ := strings.Cut(reflect.StructTag(raw).Get("json"), ",")
		omitempty = strings.Contains(","+opts+",", ",omitempty,")
	}
	return entry{
		listType: first(tags["listType"]),
		mapKeys:  tags["listMapKey"],
		mapType:  first(tags["mapType"], tags["structType"]),
		optional: tags["optional"] != nil && !omitempty,
		required: tags["required"] != nil && omitempty,
	}
}

// description formats a doc comment the way openapi-gen writes descriptions:
// lines are joined with spaces, blank lines separate paragraphs, indented
// lines keep their line breaks, and marker (+), TODO and post-"---" lines go.
func description(doc *ast.CommentGroup) string {
	if doc == nil {
		return ""
	}
	var b strings.Builder
	dropLast := func() {
		if s := b.String(); s != "" {
			b.Reset()
			b.WriteString(s[:len(s)-1])
		}
	}
	for _, line := range strings.Split(strings.TrimSuffix(doc.Text(), "\n"), "\n") {
		if line == "---" {
			break
		}
		line = strings.TrimRight(line, " ")
		lead := strings.TrimLeft(line, " ")
		switch {
		case line == "":
			dropLast()
			b.WriteString("\n\n")
		case strings.HasPrefix(lead, "TODO"), strings.HasPrefix(lead, "+"):
		case strings.HasPrefix(line, " "), strings.HasPrefix(line, "\t"):
			dropLast()
			b.WriteString("\n" + line + "\n")
		default:
			b.WriteString(line + " ")
		}
	}
	return strings.TrimSpace(b.String())
}

// commentTags collects "+name=value" lines of a doc comment, as openapi-gen reads them.
func commentTags(doc *ast.CommentGroup) map[string][]string {
	tags := map[string][]string{}
	if doc == nil {
		return tags
	}
	for _, line := range strings.Split(doc.Text(), "\n") {
		line = strings.Trim(line, " ")
		if !strings.HasPrefix(line, "+") {
			continue
		}
		name, value, _ := strings.Cut(line[1:], "=")
		tags[name] = append(tags[name], value)
	}
	return tags
}

func first(lists ...[]string) string {
	for _, l := range lists {
		if len(l) > 0 {
			return l[0]
		}
	}
	return ""
}

func write(out, apiVersion string, versions []string, entries map[string]entry) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by internal/markergen from %s. DO NOT EDIT.\n\n", strings.Join(versions, ", "))
	b.WriteString("package openapi\n\n")
	fmt.Fprintf(&b, "// apiVersion is the version of k8s.io/api the markers come from.\nconst apiVersion = %q\n\n", apiVersion)
	b.WriteString("// commentMarkers maps \"<package>.<Type>\" and \"<package>.<Type>.<GoField>\" to their markers.\n")
	b.WriteString("var commentMarkers = map[string]marker{\n")
	lastType := ""
	for _, key := range sortedKeys(entries) {
		e := entries[key]
		// A blank line between types keeps gofmt's alignment (and the file) small.
		if typ := typeOf(key); typ != lastType {
			if lastType != "" {
				b.WriteString("\n")
			}
			lastType = typ
		}
		var fields []string
		if e.listType != "" {
			fields = append(fields, fmt.Sprintf("listType: %q", e.listType))
		}
		if len(e.mapKeys) > 0 {
			fields = append(fields, fmt.Sprintf("mapKeys: %#v", e.mapKeys))
		}
		if e.mapType != "" {
			fields = append(fields, fmt.Sprintf("mapType: %q", e.mapType))
		}
		if e.doc != "" {
			fields = append(fields, fmt.Sprintf("doc: %q", e.doc))
		}
		if len(e.enum) > 0 {
			var values []string
			for _, v := range e.enum {
				values = append(values, v.value)
			}
			sort.Strings(values)
			fields = append(fields, fmt.Sprintf("enum: %#v, enumDoc: %q", values, enumDoc(e.enum)))
		}
		if e.optional {
			fields = append(fields, "optional: true")
		}
		if e.required {
			fields = append(fields, "required: true")
		}
		fmt.Fprintf(&b, "%q: {%s},\n", key, strings.Join(fields, ", "))
	}
	b.WriteString("}\n")
	src, err := format.Source(b.Bytes())
	if err != nil {
		return err
	}
	return os.WriteFile(out, src, 0o644)
}

// typeOf returns "<package>.<Type>" of a marker key.
func typeOf(key string) string {
	slash := strings.LastIndex(key, "/")
	dot := strings.Index(key[slash:], ".")
	if dot < 0 {
		return key
	}
	typ, _, _ := strings.Cut(key[slash+dot+1:], ".")
	return key[:slash+dot+1] + typ
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
