package apiserver

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sort"
	"sync"

	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/version"

	"orch/internal/apiserver/openapi"
	"orch/internal/apiserver/registry/customresource"
	"orch/internal/storage"
)

// crdResource is where the CustomResourceDefinitions themselves are served.
var crdResource = apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")

// customResources serves the custom resources of the
// CustomResourceDefinitions in storage. Each established CRD's served
// versions become resource stores, built when the CRD appears or changes
// (fed from the CRD watch cache, as the authorizers are) and dropped with
// their watch caches when it goes. Stores of a CRD that is being deleted
// keep serving everything but create until it is gone, as upstream.
type customResources struct {
	// storeFor is the store of a resource (encrypted at rest or not).
	storeFor func(schema.GroupResource) storage.Interface
	codec    *codecs
	log      *slog.Logger
	// builtin is the OpenAPI documents of the built-in resources (built
	// on first use), which the CRDs' are merged into.
	builtin func() (*openapi.Documents, error)
	// webhooks makes a CRD's conversion webhook converter.
	webhooks func(*apiextensionsv1.CustomResourceDefinition) converter

	mu     sync.RWMutex
	ctx    context.Context // the server's; nil until start
	byName map[string]*servedCRD
	byGVR  map[schema.GroupVersionResource]*resourceStore
	// changes counts CRD changes; docs are the documents with the CRDs
	// merged in as of docsAt changes, made again on request when stale.
	changes, docsAt int
	docs            *openapi.Documents
	// changed is signalled (without blocking) when the served custom
	// group versions may have changed.
	changed chan struct{}
}

// servedCRD is what one CRD serves.
type servedCRD struct {
	crd *apiextensionsv1.CustomResourceDefinition
	// built names what the stores were made from (uid, generation and
	// accepted names); status changes that leave it alone keep them.
	built  string
	stores []*resourceStore
	cancel context.CancelFunc
}

func newCustomResources(storeFor func(schema.GroupResource) storage.Interface, c *codecs, log *slog.Logger, builtin func() (*openapi.Documents, error),
	webhooks func(*apiextensionsv1.CustomResourceDefinition) converter) *customResources {
	return &customResources{storeFor: storeFor, codec: c, log: log, builtin: builtin, webhooks: webhooks,
		byName: map[string]*servedCRD{}, byGVR: map[schema.GroupVersionResource]*resourceStore{},
		changed: make(chan struct{}, 1)}
}

// start lets the stores' watch caches run under ctx; CRDs seen before it
// are served once it is called.
func (c *customResources) start(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ctx = ctx
	for _, sc := range c.byName {
		c.startLocked(sc)
	}
}

// lookup is the store serving gvr and the CRD it belongs to.
func (c *customResources) lookup(gvr schema.GroupVersionResource) (*resourceStore, *apiextensionsv1.CustomResourceDefinition, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	rs, ok := c.byGVR[gvr]
	if !ok {
		return nil, nil, false
	}
	return rs, c.byName[crdName(gvr.GroupResource())].crd, true
}

func crdName(gr schema.GroupResource) string { return gr.Resource + "." + gr.Group }

// Update takes a CRD as it is now (the feed's sink).
func (c *customResources) Update(obj any) {
	crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return
	}
	terminating := apiextensionshelpers.IsCRDConditionTrue(crd, apiextensionsv1.Terminating)
	if !apiextensionshelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) && !terminating {
		c.remove(crd.Name)
		return
	}
	built := fmt.Sprintf("%s/%d/%v", crd.UID, crd.Generation, crd.Status.AcceptedNames)
	c.mu.Lock()
	defer c.mu.Unlock()
	if sc, ok := c.byName[crd.Name]; ok && sc.built == built {
		sc.crd = crd
		return
	}
	sc := &servedCRD{crd: crd, built: built}
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		rs, err := c.newStore(crd, v.Name)
		if err != nil {
			c.log.Error("cannot serve a version of a CustomResourceDefinition", "crd", crd.Name, "version", v.Name, "err", err)
			continue
		}
		sc.stores = append(sc.stores, rs)
	}
	c.removeLocked(crd.Name)
	c.changedLocked()
	c.byName[crd.Name] = sc
	for _, rs := range sc.stores {
		c.byGVR[rs.gvk.GroupVersion().WithResource(rs.res.Resource)] = rs
	}
	c.startLocked(sc)
}

// Delete takes a CRD that is gone.
func (c *customResources) Delete(obj any) {
	if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok {
		c.remove(crd.Name)
	}
}

func (c *customResources) remove(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byName[name]; ok {
		c.changedLocked()
	}
	c.removeLocked(name)
}

// changedLocked counts a change of what is served and signals it.
func (c *customResources) changedLocked() {
	c.changes++
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// openAPI is builtin with the served CRDs merged in, as of the last CRD
// change. Merging reuses the previous result's work for CRDs whose spec
// did not change.
func (c *customResources) openAPI(builtin *openapi.Documents) *openapi.Documents {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.docs != nil && c.docsAt == c.changes {
		return c.docs
	}
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(c.byName))
	for _, sc := range c.byName {
		crds = append(crds, sc.crd)
	}
	prev := c.docs
	if prev == nil {
		prev = builtin
	}
	docs, err := prev.WithCRDs(crds)
	if err != nil {
		// docs still holds every CRD that could be built.
		c.log.Error("some CustomResourceDefinitions are left out of OpenAPI", "err", err)
	}
	c.docs, c.docsAt = docs, c.changes
	return docs
}

func (c *customResources) removeLocked(name string) {
	sc, ok := c.byName[name]
	if !ok {
		return
	}
	for _, rs := range sc.stores {
		delete(c.byGVR, rs.gvk.GroupVersion().WithResource(rs.res.Resource))
	}
	if sc.cancel != nil {
		sc.cancel()
	}
	delete(c.byName, name)
}

func (c *customResources) startLocked(sc *servedCRD) {
	if c.ctx == nil || sc.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(c.ctx)
	sc.cancel = cancel
	for _, rs := range sc.stores {
		go rs.cache.Start(ctx)
	}
}

// newStore builds the store of one served version of crd. Names come from
// the CRD's accepted names, as upstream serves them.
func (c *customResources) newStore(crd *apiextensionsv1.CustomResourceDefinition, version string) (*resourceStore, error) {
	named := crd.DeepCopy()
	named.Spec.Names = crd.Status.AcceptedNames
	named.Spec.Names.Plural = crd.Spec.Names.Plural
	res, err := customresource.Resource(named, version)
	if err != nil {
		return nil, err
	}
	codec, err := newCustomCodec(named, version)
	if err != nil {
		return nil, err
	}
	codec.webhook = c.webhooks(named)
	codec.types = func() (managedfields.TypeConverter, error) {
		docs, err := c.builtin()
		if err != nil {
			return nil, err
		}
		return docs.CRDTypeConverter(named, version)
	}
	gvr := res.GroupVersion.WithResource(res.Resource)
	rs := &resourceStore{
		res: res, gvk: res.GroupVersion.WithKind(res.Kind), gr: gvr.GroupResource(),
		prefix: "/registry/" + crd.Spec.Group + "/" + crd.Spec.Names.Plural + "/",
		store:  c.storeFor(gvr.GroupResource()), codecs: c.codec, custom: codec,
	}
	rs.cache = storage.NewCache(rs.store, rs.prefix, rs.decodeAny, 1000, c.log.With("cache", gvr.GroupResource().String()))
	return rs, nil
}

// groups are the served custom group versions for discovery: groups by
// name, each group's versions by upstream's version priority (v2, v1,
// v1beta1, ...), so that the first is the preferred one.
func (c *customResources) groups() []apiGroup {
	c.mu.RLock()
	byGV := map[schema.GroupVersion]*apiGroup{}
	for _, sc := range c.byName {
		for _, rs := range sc.stores {
			gv := rs.gvk.GroupVersion()
			g, ok := byGV[gv]
			if !ok {
				g = &apiGroup{gv: gv}
				byGV[gv] = g
			}
			g.resources = append(g.resources, rs)
		}
	}
	c.mu.RUnlock()
	out := make([]apiGroup, 0, len(byGV))
	for _, g := range byGV {
		sort.Slice(g.resources, func(i, j int) bool { return g.resources[i].res.Resource < g.resources[j].res.Resource })
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].gv.Group != out[j].gv.Group {
			return out[i].gv.Group < out[j].gv.Group
		}
		return version.CompareKubeAwareVersionStrings(out[i].gv.Version, out[j].gv.Version) > 0
	})
	return out
}

// apiGroups is every served group version: the built-in ones in their
// order, then the custom ones, then those of extension servers.
func (s *Server) apiGroups() []apiGroup {
	custom, remote := s.customGroups(), s.agg.remoteGroups()
	if len(custom) == 0 && len(remote) == 0 {
		return s.groups
	}
	// A group version an APIService hands to an extension server is
	// served there, even one the server or a CRD would serve itself (a
	// metrics-server taking over metrics.k8s.io).
	out := make([]apiGroup, 0, len(s.groups)+len(custom)+len(remote))
	for _, g := range append(slices.Clip(s.groups), custom...) {
		if _, ok := remote[g.gv]; !ok {
			out = append(out, g)
		}
	}
	gvs := slices.Collect(maps.Keys(remote))
	sort.Slice(gvs, func(i, j int) bool {
		if gvs[i].Group != gvs[j].Group {
			return gvs[i].Group < gvs[j].Group
		}
		return version.CompareKubeAwareVersionStrings(gvs[i].Version, gvs[j].Version) > 0
	})
	for _, gv := range gvs {
		out = append(out, apiGroup{gv: gv, remote: true, discovery: remote[gv]})
	}
	return out
}

// customGroups are the served custom group versions but those of a
// built-in group: a CRD cannot take a built-in group's name (upstream
// refuses the protected groups); should one try, the built-in group wins.
func (s *Server) customGroups() []apiGroup {
	custom := s.custom.groups()
	if len(custom) == 0 {
		return nil
	}
	builtin := map[string]bool{}
	for _, g := range s.groups {
		builtin[g.gv.Group] = true
	}
	return slices.DeleteFunc(custom, func(g apiGroup) bool { return builtin[g.gv.Group] })
}

// serveCustom serves a request for a custom resource of crd.
func (s *Server) serveCustom(w http.ResponseWriter, r *http.Request, info requestInfo, rs *resourceStore, crd *apiextensionsv1.CustomResourceDefinition) {
	if info.Verb == "create" && info.Subresource == "" && apiextensionshelpers.IsCRDConditionTrue(crd, apiextensionsv1.Terminating) {
		err := apierrors.NewMethodNotSupported(rs.gr, info.Verb)
		err.ErrStatus.Message = info.Verb + " not allowed while custom resource definition is terminating"
		s.respondError(w, r, err, rs.gr, info.Name)
		return
	}
	if msg := customresource.DeprecationWarning(crd, rs.gvk.Version); msg != "" {
		addWarnings(w, []string{msg})
	}
	r = r.WithContext(withJSONOnly(r.Context()))
	s.metrics.observe(info, rs, w, r, func(w http.ResponseWriter) { s.serveResource(w, r, info, rs) })
}

// jsonOnlyKey marks a request whose objects have no protobuf encoding
// (custom resources): negotiation offers JSON and YAML only, except for
// the meta.k8s.io forms (Table, PartialObjectMetadata), as upstream.
type jsonOnlyKey struct{}

func withJSONOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, jsonOnlyKey{}, true)
}

func jsonOnly(r *http.Request) bool {
	v, _ := r.Context().Value(jsonOnlyKey{}).(bool)
	return v
}

// markCRDTerminating is upstream's first delete of a CRD: the cleanup
// finalizer (the CRD controller deletes the custom resources, then drops
// it) and the Terminating condition.
func markCRDTerminating(crd *apiextensionsv1.CustomResourceDefinition) {
	if crd.DeletionTimestamp != nil {
		return
	}
	if !apiextensionshelpers.CRDHasFinalizer(crd, apiextensionsv1.CustomResourceCleanupFinalizer) {
		crd.Finalizers = append(crd.Finalizers, apiextensionsv1.CustomResourceCleanupFinalizer)
	}
	apiextensionshelpers.SetCRDCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue, Reason: "InstanceDeletionPending",
		Message: "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
	})
}
