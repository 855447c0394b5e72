package apiserver

import (
	"context"
	"fmt"
	"net/url"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	mutatingpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	validatingpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	webhookinit "k8s.io/apiserver/pkg/admission/plugin/webhook/initializer"
	mutatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	validatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"

	"orch/internal/apiserver/authz"
	"orch/internal/apiserver/filters"
)

// extAdmission is the admission users add through the API: admission
// policies (CEL) and webhooks. It runs k8s.io/apiserver's own plugins, so
// matching, match conditions, CEL, reinvocation, patches, failure policies
// and the wording of refusals are upstream's. They follow the
// admissionregistration objects and namespaces through informers over the
// in-memory loopback client.
type extAdmission struct {
	// mutating and validating are in upstream's order: the policy, then
	// the webhooks.
	mutating   []admission.MutationInterface
	validating []admission.ValidationInterface
}

// startExtAdmission builds the plugins and starts their informers; they
// stop with ctx. Writes wait for it (s.extReady).
func (s *Server) startExtAdmission(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			s.extErr = err
		}
		close(s.extReady)
	}()
	cfg := s.loopbackConfig()
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dynamicClient, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery()))
	factory := informers.NewSharedInformerFactory(client, 0)
	mp, err := mutatingpolicy.NewPlugin(nil)
	if err != nil {
		return err
	}
	mw, err := mutatingwebhook.NewMutatingWebhook(nil)
	if err != nil {
		return err
	}
	vp, err := validatingpolicy.NewPlugin(nil)
	if err != nil {
		return err
	}
	vw, err := validatingwebhook.NewValidatingAdmissionWebhook(nil)
	if err != nil {
		return err
	}
	authorizer := authorizerAdapter{s.authz.chain}
	resolver := serviceResolver{s}
	for _, p := range []admission.Interface{mp, mw, vp, vw} {
		if w, ok := p.(initializer.WantsDrainedNotification); ok {
			w.SetDrainedNotification(ctx.Done())
		}
		if w, ok := p.(initializer.WantsExternalKubeClientSet); ok {
			w.SetExternalKubeClientSet(client)
		}
		if w, ok := p.(initializer.WantsExternalKubeInformerFactory); ok {
			w.SetExternalKubeInformerFactory(factory)
		}
		if w, ok := p.(initializer.WantsDynamicClient); ok {
			w.SetDynamicClient(dynamicClient)
		}
		if w, ok := p.(initializer.WantsRESTMapper); ok {
			w.SetRESTMapper(mapper)
		}
		if w, ok := p.(initializer.WantsUnconditionalAuthorizer); ok {
			w.SetUnconditionalAuthorizer(authorizer)
		}
		if w, ok := p.(initializer.WantsFeatures); ok {
			w.InspectFeatureGates(utilfeature.DefaultFeatureGate)
		}
		if w, ok := p.(webhookinit.WantsServiceResolver); ok {
			w.SetServiceResolver(resolver)
		}
		if v, ok := p.(admission.InitializationValidator); ok {
			if err := v.ValidateInitialization(); err != nil {
				return fmt.Errorf("admission plugin %T: %w", p, err)
			}
		}
	}
	factory.StartWithContext(ctx)
	s.ext = &extAdmission{}
	if s.plugins.on(pluginMutatingAdmissionPolicy) {
		s.ext.mutating = append(s.ext.mutating, mp)
	}
	if s.plugins.on(pluginMutatingAdmissionWebhook) {
		s.ext.mutating = append(s.ext.mutating, mw)
	}
	if s.plugins.on(pluginValidatingAdmissionPolicy) {
		s.ext.validating = append(s.ext.validating, vp)
	}
	if s.plugins.on(pluginValidatingAdmissionWebhook) {
		s.ext.validating = append(s.ext.validating, vw)
	}
	return nil
}

// waitExtAdmission is the extension admission once it is built.
func (s *Server) waitExtAdmission(ctx context.Context) (*extAdmission, error) {
	select {
	case <-s.extReady:
		if s.ext == nil {
			return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("admission policies and webhooks are not running: %v", s.extErr))
		}
		return s.ext, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// admissionRequest is what admission knows of one write.
type admissionRequest struct {
	rs *resourceStore
	// kind is the object's kind when it is not rs's (a connect's options).
	kind        schema.GroupVersionKind
	op          admission.Operation
	subresource string
	obj, old    runtime.Object
	namespace   string
	name        string
	dryRun      bool
	options     runtime.Object
}

func (s *Server) attributes(ctx context.Context, req admissionRequest) admission.Attributes {
	u, _ := filters.UserFrom(ctx)
	info := &user.DefaultInfo{Name: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
	gvr := req.rs.gvk.GroupVersion().WithResource(req.rs.gr.Resource)
	kind := req.kind
	if kind.Empty() {
		kind = req.rs.gvk
	}
	return admission.NewAttributesRecord(req.obj, req.old, kind, req.namespace, req.name, gvr, req.subresource,
		req.op, req.options, req.dryRun, info)
}

// extAdmittedKey marks the context of a write the server makes on behalf
// of a subresource whose own request admission extensions have seen (an
// eviction's delete, the pod update of a binding or of a scale), which
// upstream's storage makes without calling them again.
type extAdmittedKey struct{}

func withExtAdmitted(ctx context.Context) context.Context {
	return context.WithValue(ctx, extAdmittedKey{}, true)
}

func extAdmitted(ctx context.Context) bool {
	done, _ := ctx.Value(extAdmittedKey{}).(bool)
	return done
}

// mutateExt runs the mutating admission policies and webhooks on req.obj,
// which they may change in place.
func (s *Server) mutateExt(ctx context.Context, req admissionRequest) error {
	if extAdmitted(ctx) {
		return nil
	}
	ext, err := s.waitExtAdmission(ctx)
	if err != nil {
		return err
	}
	attrs, objects := s.attributes(ctx, req), s.admissionObjects(req.rs)
	for _, p := range ext.mutating {
		if !p.Handles(req.op) {
			continue
		}
		if err := p.Admit(ctx, attrs, objects); err != nil {
			return err
		}
	}
	if req.rs.res.Prune != nil && req.obj != nil && req.kind.Empty() {
		// What a webhook added that a custom resource's schema does not
		// know goes, as upstream's storage drops it.
		req.rs.res.Prune(req.obj)
	}
	return nil
}

// validateExt runs the validating admission: PodSecurity (built in, but
// upstream runs it just before them), then the admission policies and
// webhooks.
func (s *Server) validateExt(ctx context.Context, req admissionRequest) error {
	if extAdmitted(ctx) {
		return nil
	}
	if err := s.admitPodSecurity(ctx, req); err != nil {
		return err
	}
	ext, err := s.waitExtAdmission(ctx)
	if err != nil {
		return err
	}
	attrs, objects := s.attributes(ctx, req), s.admissionObjects(req.rs)
	for _, p := range ext.validating {
		if !p.Handles(req.op) {
			continue
		}
		if err := p.Validate(ctx, attrs, objects); err != nil {
			return err
		}
	}
	return nil
}

// admitExt runs both chains on req: what a subresource that takes another
// kind (a Binding, an Eviction, a Scale) asks is admitted as itself.
func (s *Server) admitExt(ctx context.Context, req admissionRequest) error {
	if err := s.mutateExt(ctx, req); err != nil {
		return err
	}
	return s.validateExt(ctx, req)
}

// createOptions, updateOptions and deleteOptions are the options a
// webhook's AdmissionReview shows, with their kinds.
func createOptions(wr writeRequest) *metav1.CreateOptions {
	o := &metav1.CreateOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "CreateOptions"}, FieldManager: wr.manager}
	if wr.dryRun {
		o.DryRun = []string{metav1.DryRunAll}
	}
	return o
}

func updateOptions(wr writeRequest) *metav1.UpdateOptions {
	o := &metav1.UpdateOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "UpdateOptions"}, FieldManager: wr.manager}
	if wr.dryRun {
		o.DryRun = []string{metav1.DryRunAll}
	}
	return o
}

func deleteOptionsObject(opts metav1.DeleteOptions) *metav1.DeleteOptions {
	o := opts.DeepCopy()
	o.TypeMeta = metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "DeleteOptions"}
	return o
}

// admissionObjects are the scheme operations admission needs for objects
// of rs: making, converting and defaulting them.
func (s *Server) admissionObjects(rs *resourceStore) admission.ObjectInterfaces {
	return admissionObjects{s: s, rs: rs}
}

type admissionObjects struct {
	s  *Server
	rs *resourceStore
}

func (o admissionObjects) GetObjectCreater() runtime.ObjectCreater {
	if o.rs.custom != nil {
		return customCreater{}
	}
	return o.s.codecs.scheme
}

func (o admissionObjects) GetObjectTyper() runtime.ObjectTyper { return o.s.codecs.scheme }

func (o admissionObjects) GetObjectDefaulter() runtime.ObjectDefaulter {
	if o.rs.custom != nil {
		return customDefaulter{o.rs}
	}
	return o.s.fields.defaulter
}

func (o admissionObjects) GetObjectConvertor() runtime.ObjectConvertor {
	return admissionConvertor{ObjectConvertor: o.s.codecs.scheme, custom: o.rs.custom}
}

func (o admissionObjects) GetEquivalentResourceMapper() runtime.EquivalentResourceMapper {
	return equivalentResources{o.s}
}

// admissionConvertor converts between the versions admission asks for.
// Built-in objects are served at one version, so a conversion between
// objects of one type is a copy; custom resources convert as their CRD
// says.
type admissionConvertor struct {
	runtime.ObjectConvertor
	custom *customCodec
}

func (c admissionConvertor) Convert(in, out, context interface{}) error {
	if src, ok := in.(*unstructured.Unstructured); ok {
		dst, ok := out.(*unstructured.Unstructured)
		if !ok || c.custom == nil {
			return fmt.Errorf("cannot convert %T to %T", in, out)
		}
		to := dst.GetObjectKind().GroupVersionKind().GroupVersion()
		converted := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(src.Object)}
		if !to.Empty() {
			if err := c.custom.convert(converted, to); err != nil {
				return err
			}
		}
		dst.Object = converted.Object
		return nil
	}
	if reflect.TypeOf(in) == reflect.TypeOf(out) && reflect.TypeOf(in).Kind() == reflect.Pointer {
		reflect.ValueOf(out).Elem().Set(reflect.ValueOf(in).Elem())
		return nil
	}
	return c.ObjectConvertor.Convert(in, out, context)
}

// equivalentResources is upstream's EquivalentResourceMapper over what the
// server serves: the versions of one group and resource are equivalent.
type equivalentResources struct{ s *Server }

func (e equivalentResources) EquivalentResourcesFor(resource schema.GroupVersionResource, subresource string) []schema.GroupVersionResource {
	var out []schema.GroupVersionResource
	for _, g := range e.s.apiGroups() {
		for _, rs := range g.resources {
			if rs.gr == resource.GroupResource() {
				out = append(out, g.gv.WithResource(rs.gr.Resource))
			}
		}
	}
	return out
}

func (e equivalentResources) KindFor(resource schema.GroupVersionResource, subresource string) schema.GroupVersionKind {
	rs := e.s.storeFor(resource)
	if rs == nil {
		return schema.GroupVersionKind{}
	}
	if _, ok := rs.res.Subresources[subresource]; ok {
		return rs.gvk
	}
	switch subresource {
	case "", "status":
		return rs.gvk
	case "scale":
		return schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}
	}
	return schema.GroupVersionKind{}
}

// storeFor is the store serving gvr, built-in or custom; nil if none.
func (s *Server) storeFor(gvr schema.GroupVersionResource) *resourceStore {
	if rs, ok := s.resources[gvr]; ok {
		return rs
	}
	if rs, _, ok := s.custom.lookup(gvr); ok {
		return rs
	}
	return nil
}

// serviceResolver finds a webhook's Service at one of its ready endpoints,
// as services/proxy does: the server's host need not reach cluster IPs.
type serviceResolver struct{ s *Server }

func (r serviceResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u, _, err := r.s.webhookAddress(ctx, webhookTarget{Namespace: namespace, Service: name, Port: port})
	return u, err
}

// authorizerAdapter lets admission's CEL (the authorizer variable) ask
// the server's authorizers.
type authorizerAdapter struct{ z authz.Authorizer }

func (a authorizerAdapter) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	u := attrs.GetUser()
	at := authz.Attributes{Verb: attrs.GetVerb(), ResourceRequest: attrs.IsResourceRequest(),
		Namespace: attrs.GetNamespace(), APIGroup: attrs.GetAPIGroup(), APIVersion: attrs.GetAPIVersion(),
		Resource: attrs.GetResource(), Subresource: attrs.GetSubresource(), Name: attrs.GetName(), Path: attrs.GetPath()}
	if u != nil {
		at.User = authz.User{Name: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra()}
	}
	d, reason, err := a.z.Authorize(ctx, at)
	switch d {
	case authz.Allow:
		return authorizer.DecisionAllow, reason, err
	case authz.Deny:
		return authorizer.DecisionDeny, reason, err
	}
	return authorizer.DecisionNoOpinion, reason, err
}
