// Package openapi generates the OpenAPI documents of the API (/openapi/v2 and
// /openapi/v3) from the Go types of k8s.io/api by reflection, the way
// upstream's openapi-gen describes them, and serves them.
//
// Field and type descriptions come from the types' SwaggerDoc methods, field
// names and required fields from json tags, patch extensions from the
// patchStrategy and patchMergeKey tags. What only comments say (+listType,
// +listMapKey, +mapType, +structType, +optional, +required, +enum) is read
// from the k8s.io/api sources by internal/markergen into markers_generated.go
// (`go generate`; a test fails when it is stale), so the list and map
// semantics that server-side apply uses match upstream.
//
// The documents are what kubectl reads: explain (v3), the strategic merge
// patches of kubectl apply (v3, falling back to v2), the fieldValidation check
// of --validate=strict (v3, falling back to v2); and the definitions feed
// managedfields.NewTypeConverter for server-side apply.
//
// The documents of CustomResourceDefinitions come from upstream's
// apiextensions builder and are merged in by WithCRDs, which returns new
// Documents; CRDTypeConverter types custom resources for server-side apply.
//
//	docs, err := openapi.Build(resources)
//	mux.Handle("/openapi/", docs)
//	converter, err := managedfields.NewTypeConverter(docs.Definitions(), false)
//	withCRDs, err := docs.WithCRDs(establishedCRDs) // serve withCRDs from now on
//	crdConverter, err := withCRDs.CRDTypeConverter(crd, "v1")
package openapi

//go:generate go run ./internal/markergen -o markers_generated.go

import (
	"bytes"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	openapi_v3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Resource describes one served resource.
type Resource struct {
	GVK          schema.GroupVersionKind
	ListKind     string       // "DeploymentList"
	Resource     string       // plural: "deployments"
	Namespaced   bool         //
	Type         reflect.Type // the object struct, not a pointer: appsv1.Deployment
	ListType     reflect.Type // appsv1.DeploymentList
	Subresources []string     // get/update/patch of Type ("status", "ephemeralcontainers"), or of Scale for "scale"
	Verbs        []string     // get list watch create update patch delete deletecollection
}

// Documents holds the generated documents. It is an http.Handler for
// /openapi/v2, /openapi/v3 and /openapi/v3/<api/v1|apis/group/version>.
type Documents struct {
	v2       *document
	v3       map[string]*document // "apis/apps/v1" → document
	v3Root   []byte
	defs     map[string]*spec.Schema
	modified time.Time

	// builtIn is what Build made, which WithCRDs extends: the Documents
	// itself, or the one a WithCRDs result came from. Only it has the
	// definitions and paths objects inside v2.json (v2Defs, v2Paths) and
	// the names of those paths.
	builtIn         *Documents
	v2Defs, v2Paths []byte
	v2PathNames     map[string]bool

	// The parts of the CRDs WithCRDs added, by CRD name, and the v3
	// documents of their group versions, by path.
	crds   map[string]*crdParts
	crdGVs map[string]*gvDocument
}

// document is one JSON document and, computed on first use, its hash and
// its protobuf form.
type document struct {
	json    []byte
	toProto func([]byte) (proto.Message, error)

	hashOnce sync.Once
	jsonHash string

	once      sync.Once
	proto     []byte
	protoHash string
	protoErr  error
}

func newDocument(body any, toProto func([]byte) (proto.Message, error)) (*document, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("openapi: encoding document: %w", err)
	}
	return documentOf(data, toProto), nil
}

func documentOf(data []byte, toProto func([]byte) (proto.Message, error)) *document {
	return &document{json: data, toProto: toProto}
}

// hash is the hash of the JSON document, its ETag and the ?hash= of its v3 URL.
func (d *document) hash() string {
	d.hashOnce.Do(func() { d.jsonHash = hash(d.json) })
	return d.jsonHash
}

func (d *document) protobuf() ([]byte, string, error) {
	d.once.Do(func() {
		msg, err := d.toProto(d.json)
		if err == nil {
			d.proto, err = proto.Marshal(msg)
		}
		d.protoErr = err
		d.protoHash = hash(d.proto)
	})
	return d.proto, d.protoHash, d.protoErr
}

func hash(data []byte) string {
	return fmt.Sprintf("%X", sha512.Sum512(data))
}

func v2Proto(data []byte) (proto.Message, error) { return openapi_v2.ParseDocument(data) }
func v3Proto(data []byte) (proto.Message, error) { return openapi_v3.ParseDocument(data) }

// V2JSON returns the swagger 2.0 document of every resource.
func (d *Documents) V2JSON() []byte { return d.v2.json }

// V2Proto returns the swagger 2.0 document as the gnostic protobuf kubectl asks for.
func (d *Documents) V2Proto() ([]byte, error) {
	data, _, err := d.v2.protobuf()
	return data, err
}

// V3Root returns the /openapi/v3 discovery document: each group version's
// path with the hash of its current document.
func (d *Documents) V3Root() []byte { return d.v3Root }

// V3 returns the OpenAPI 3.0 document of a group version path ("api/v1", "apis/apps/v1").
func (d *Documents) V3(groupVersionPath string) ([]byte, bool) {
	doc, ok := d.v3[groupVersionPath]
	if !ok {
		return nil, false
	}
	return doc.json, true
}

// Definitions returns the v2 definitions of the built-in resources (not of
// CRDs), the input of managedfields.NewTypeConverter.
// The map is shared: callers must not change it.
func (d *Documents) Definitions() map[string]*spec.Schema { return d.defs }

// Build generates the documents of resources.
func Build(resources []Resource) (*Documents, error) {
	byGV := map[schema.GroupVersion][]Resource{}
	for _, r := range resources {
		if r.GVK.Kind == "" || r.GVK.Version == "" || r.Resource == "" || r.ListKind == "" {
			return nil, fmt.Errorf("openapi: resource %q (%v) needs a kind, version, resource name and list kind", r.Resource, r.GVK)
		}
		if r.Type == nil || r.Type.Kind() != reflect.Struct || r.ListType == nil || r.ListType.Kind() != reflect.Struct {
			return nil, fmt.Errorf("openapi: resource %q: Type and ListType must be struct types (not pointers)", r.Resource)
		}
		byGV[r.GVK.GroupVersion()] = append(byGV[r.GVK.GroupVersion()], r)
	}
	gvs := make([]schema.GroupVersion, 0, len(byGV))
	for gv, rs := range byGV {
		gvs = append(gvs, gv)
		sort.Slice(rs, func(i, j int) bool { return rs[i].Resource < rs[j].Resource })
	}
	sort.Slice(gvs, func(i, j int) bool { return groupVersionPath(gvs[i]) < groupVersionPath(gvs[j]) })

	gvks := kindsOf(resources, gvs)
	docs := &Documents{v3: map[string]*document{}, modified: time.Now(), v2PathNames: map[string]bool{}}
	docs.builtIn = docs

	// v2: one document with every path and definition.
	s2 := newSchemas(false, gvks)
	paths := object{}
	for _, gv := range gvs {
		for path, item := range s2.groupVersionPaths(gv, byGV[gv]) {
			paths[path] = item
			docs.v2PathNames[path] = true
		}
	}
	if s2.err != nil {
		return nil, s2.err
	}
	defsJSON, err := json.Marshal(s2.defs)
	if err != nil {
		return nil, fmt.Errorf("openapi: encoding definitions: %w", err)
	}
	pathsJSON, err := json.Marshal(paths)
	if err != nil {
		return nil, fmt.Errorf("openapi: encoding paths: %w", err)
	}
	docs.v2, docs.v2Defs, docs.v2Paths = v2Document(defsJSON, nil, pathsJSON, nil)
	if docs.defs, err = specDefinitions(s2.defs); err != nil {
		return nil, err
	}

	// v3: one document per group version, with the schemas its paths use.
	s3 := newSchemas(true, gvks)
	for _, gv := range gvs {
		paths := s3.groupVersionPaths(gv, byGV[gv])
		if s3.err != nil {
			return nil, s3.err
		}
		const prefix = "#/components/schemas/"
		var used []string
		refs(paths, prefix, func(name string) { used = append(used, name) })
		components := object{}
		for _, name := range closure(s3.defs, used, prefix) {
			components[name] = s3.defs[name]
		}
		doc, err := newDocument(object{
			"openapi": "3.0.0", "info": info, "paths": paths, "security": security,
			"components": object{"schemas": components, "securitySchemes": object{"BearerToken": bearer}},
		}, v3Proto)
		if err != nil {
			return nil, err
		}
		docs.v3[groupVersionPath(gv)] = doc
	}
	if docs.v3Root, err = v3Root(docs.v3); err != nil {
		return nil, err
	}
	return docs, nil
}

// The parts of the documents that do not depend on the resources.
var (
	info     = object{"title": "Kubernetes", "version": kubernetesVersion()}
	security = []any{object{"BearerToken": []string{}}}
	bearer   = object{"type": "apiKey", "name": "authorization", "in": "header", "description": "Bearer token authentication"}
)

// v2Document returns the v2 document with the definitions and paths
// objects defs and paths, and where they are inside it. It writes what
// json.Marshal writes for the whole document (keys sorted). The members of
// the objects moreDefs and morePaths, if given, are added after those of
// defs and paths.
func v2Document(defs, moreDefs, paths, morePaths []byte) (doc *document, defsIn, pathsIn []byte) {
	mid, _ := json.Marshal(info)
	tail, _ := json.Marshal(object{
		"security": security, "securityDefinitions": object{"BearerToken": bearer}, "swagger": "2.0",
	})
	var b bytes.Buffer
	b.Grow(len(defs) + len(moreDefs) + len(paths) + len(morePaths) + len(mid) + len(tail) + 64)
	b.WriteString(`{"definitions":`)
	defsAt := b.Len()
	writeJoined(&b, defs, moreDefs)
	defsEnd := b.Len()
	b.WriteString(`,"info":`)
	b.Write(mid)
	b.WriteString(`,"paths":`)
	pathsAt := b.Len()
	writeJoined(&b, paths, morePaths)
	pathsEnd := b.Len()
	b.WriteString(",")
	b.Write(tail[1:])
	data := b.Bytes()
	return documentOf(data, v2Proto), data[defsAt:defsEnd:defsEnd], data[pathsAt:pathsEnd:pathsEnd]
}

// writeJoined writes the JSON object with the members of objects a and b
// (b may be empty), which have no key in common.
func writeJoined(w *bytes.Buffer, a, b []byte) {
	switch {
	case len(b) <= len("{}"):
		w.Write(a)
	case len(a) <= len("{}"):
		w.Write(b)
	default:
		w.Write(a[:len(a)-1])
		w.WriteByte(',')
		w.Write(b[1:])
	}
}

// v3Root is the /openapi/v3 discovery document of the group version documents.
func v3Root(docs map[string]*document) ([]byte, error) {
	root := object{}
	for p, doc := range docs {
		root[p] = object{"serverRelativeURL": "/openapi/v3/" + p + "?hash=" + doc.hash()}
	}
	data, err := json.Marshal(object{"paths": root})
	if err != nil {
		return nil, fmt.Errorf("openapi: encoding the v3 root: %w", err)
	}
	return data, nil
}

// kindsOf returns the x-kubernetes-group-version-kind lists of the definitions:
// each resource and list kind, Scale, Status, and the DeleteOptions and
// WatchEvent kinds of every served group version.
func kindsOf(resources []Resource, gvs []schema.GroupVersion) map[string][]object {
	set := map[string]map[schema.GroupVersionKind]bool{}
	add := func(t reflect.Type, gvk schema.GroupVersionKind) {
		name := definitionName(t)
		if set[name] == nil {
			set[name] = map[schema.GroupVersionKind]bool{}
		}
		set[name][gvk] = true
	}
	for _, r := range resources {
		add(r.Type, r.GVK)
		add(r.ListType, r.GVK.GroupVersion().WithKind(r.ListKind))
		for _, sub := range r.Subresources {
			if sub == "scale" {
				add(scaleType, scaleGVK)
			}
		}
	}
	add(statusType, schema.GroupVersionKind{Version: "v1", Kind: "Status"})
	for _, gv := range gvs {
		add(deleteOptsType, gv.WithKind("DeleteOptions"))
		add(watchEventType, gv.WithKind("WatchEvent"))
	}
	out := map[string][]object{}
	for name, kinds := range set {
		list := make([]schema.GroupVersionKind, 0, len(kinds))
		for gvk := range kinds {
			list = append(list, gvk)
		}
		sort.Slice(list, func(i, j int) bool { return list[i].String() < list[j].String() })
		for _, gvk := range list {
			out[name] = append(out[name], object{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind})
		}
	}
	return out
}

// specDefinitions decodes the definitions as consumers of the v2 document see them.
func specDefinitions(defs map[string]object) (map[string]*spec.Schema, error) {
	data, err := json.Marshal(defs)
	if err != nil {
		return nil, err
	}
	out := map[string]*spec.Schema{}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("openapi: decoding definitions: %w", err)
	}
	return out, nil
}

// kubernetesVersion is the Kubernetes release of the k8s.io/api the types
// come from (v0.37.2 → v1.37.2), for the documents' info.version.
func kubernetesVersion() string {
	return "v1." + strings.TrimPrefix(apiVersion, "v0.")
}
