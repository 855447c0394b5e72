package openapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/kube-openapi/pkg/spec3"
)

// WithCRDs returns the documents of d's built-in resources and of every
// served version of crds, as upstream's apiextensions-apiserver publishes
// them: their definitions and paths merged into /openapi/v2, and one
// /openapi/v3 document per custom group version holding all its CRDs.
// The caller passes the established CRDs; those of an earlier WithCRDs are
// not kept. d is not changed, and the built-in documents are shared, not
// rebuilt. When d is itself a WithCRDs result, what it built for a CRD
// whose spec is the same is reused: pass the previous result to make an
// update cost about one CRD.
//
// The built-in documents win every conflict: a definition or v2 path they
// already have is kept, and a CRD whose group version has a built-in
// document is left out of /openapi/v3. Among CRDs, the first by name keeps
// a kind, list kind or plural of its group.
//
// A CRD whose documents cannot be built, or whose names another CRD has,
// is left out and named in the error; the returned documents are never nil
// and hold all the others.
func (d *Documents) WithCRDs(crds []*apiextensionsv1.CustomResourceDefinition) (*Documents, error) {
	base := d.builtIn
	out := &Documents{
		v2: base.v2, v3: map[string]*document{}, defs: base.defs, modified: time.Now(), builtIn: base,
		crds: map[string]*crdParts{}, crdGVs: map[string]*gvDocument{},
	}
	for p, doc := range base.v3 {
		out.v3[p] = doc
	}

	sorted := slices.DeleteFunc(slices.Clone(crds), func(crd *apiextensionsv1.CustomResourceDefinition) bool { return crd == nil })
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var errs []error
	var kept []*crdParts
	owners := map[string]string{}
	for _, crd := range sorted {
		parts := d.crds[crd.Name]
		if parts == nil || !reflect.DeepEqual(parts.spec, crd.Spec) {
			parts = base.buildCRD(crd)
		}
		out.crds[crd.Name] = parts
		if parts.err != nil {
			errs = append(errs, fmt.Errorf("openapi: CustomResourceDefinition %q: %w", crd.Name, parts.err))
			continue
		}
		if err := claimNames(owners, crd); err != nil {
			errs = append(errs, err)
			continue
		}
		kept = append(kept, parts)
	}

	out.addV2(kept)
	errs = append(errs, out.addV3(d, kept)...)
	root, err := v3Root(out.v3)
	if err != nil {
		return d, err
	}
	out.v3Root = root
	return out, errors.Join(errs...)
}

// claimNames records the kind, list kind and plural of crd in its group,
// unless a CRD seen before has one of them.
func claimNames(owners map[string]string, crd *apiextensionsv1.CustomResourceDefinition) error {
	n, g := crd.Spec.Names, crd.Spec.Group
	names := []string{g + " kind " + n.Kind, g + " kind " + n.ListKind, g + " resource " + n.Plural}
	for _, name := range names {
		if other, ok := owners[name]; ok {
			return fmt.Errorf("openapi: CustomResourceDefinition %q: %s is served by CustomResourceDefinition %q", crd.Name, name, other)
		}
	}
	for _, name := range names {
		owners[name] = crd.Name
	}
	return nil
}

// addV2 merges the v2 parts of crds into d's v2 document.
func (d *Documents) addV2(crds []*crdParts) {
	defs, paths := map[string]json.RawMessage{}, map[string]json.RawMessage{}
	for _, p := range crds {
		for name, def := range p.defs {
			if _, ok := defs[name]; !ok {
				defs[name] = def
			}
		}
		for path, item := range p.paths {
			if _, ok := paths[path]; !ok {
				paths[path] = item
			}
		}
	}
	if len(defs) == 0 && len(paths) == 0 {
		return
	}
	d.v2, _, _ = v2Document(d.builtIn.v2Defs, rawObject(defs), d.builtIn.v2Paths, rawObject(paths))
}

// rawObject is the JSON object of members, keys sorted.
func rawObject(members map[string]json.RawMessage) []byte {
	keys := make([]string, 0, len(members))
	for k := range members {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(k) // a string always encodes
		b.Write(key)
		b.WriteByte(':')
		b.Write(members[k])
	}
	b.WriteByte('}')
	return b.Bytes()
}

// gvDocument is the v3 document of a custom group version and the parts
// of the CRDs it was merged from.
type gvDocument struct {
	members []*crdParts
	doc     *document
}

// addV3 adds the v3 document of each custom group version of crds to d,
// reusing prev's where its CRDs' parts are the same.
func (d *Documents) addV3(prev *Documents, crds []*crdParts) []error {
	members := map[string][]*crdParts{}
	for _, p := range crds {
		for gvPath := range p.v3 {
			members[gvPath] = append(members[gvPath], p)
		}
	}
	var errs []error
	for gvPath, ps := range members {
		gv := prev.crdGVs[gvPath]
		if gv == nil || !slices.Equal(gv.members, ps) {
			specs := make([]*spec3.OpenAPI, len(ps))
			for i, p := range ps {
				specs[i] = p.v3[gvPath]
			}
			merged, err := builder.MergeSpecsV3(specs...)
			if err == nil {
				gv = &gvDocument{members: ps}
				gv.doc, err = newDocument(merged, v3Proto)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("openapi: the document of %s: %w", gvPath, err))
				continue
			}
		}
		d.crdGVs[gvPath] = gv
		d.v3[gvPath] = gv.doc
	}
	return errs
}
