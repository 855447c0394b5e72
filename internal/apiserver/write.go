package apiserver

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"

	"orch/internal/apiserver/filters"
	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/customresource"
	"orch/internal/storage"
)

// writeRequest is what every write carries besides the object.
type writeRequest struct {
	manager string
	dryRun  bool
	// keepManagedFields skips managed-field tracking (server-side apply did it).
	keepManagedFields bool
}

func parseWriteRequest(r *http.Request) (writeRequest, error) {
	q := r.URL.Query()
	wr := writeRequest{manager: q.Get("fieldManager")}
	for _, d := range q["dryRun"] {
		if d != metav1.DryRunAll {
			return wr, badRequest("dryRun must be %q, not %q", metav1.DryRunAll, d)
		}
		wr.dryRun = true
	}
	if wr.manager == "" {
		wr.manager = managerFromUserAgent(r.UserAgent())
	}
	if len(wr.manager) > 128 {
		return wr, badRequest("fieldManager is longer than 128 characters")
	}
	return wr, nil
}

// managerFromUserAgent is upstream's default field manager: the user agent up
// to its first "/".
func managerFromUserAgent(ua string) string {
	if i := strings.Index(ua, "/"); i >= 0 {
		ua = ua[:i]
	}
	if len(ua) > 128 {
		ua = ua[:128]
	}
	return ua
}

// readWrite reads the options and the object of a create or update.
func (s *Server) readWrite(r *http.Request, rs *resourceStore) (writeRequest, runtime.Object, []string, error) {
	wr, err := parseWriteRequest(r)
	if err != nil {
		return wr, nil, nil, err
	}
	data, err := readBody(r)
	if err != nil {
		return wr, nil, nil, err
	}
	obj, warnings, err := s.decodeObject(r, rs, data)
	if err == nil {
		s.auditRequestObject(r.Context(), rs, obj)
	}
	return wr, obj, warnings, err
}

func (s *Server) create(w http.ResponseWriter, r *http.Request, info requestInfo, rs *resourceStore) {
	wr, obj, warnings, err := s.readWrite(r, rs)
	if err != nil {
		s.respondError(w, r, err, rs.gr, "")
		return
	}
	addWarnings(w, warnings)
	created, err := s.createObject(r.Context(), rs, info.Namespace, obj, wr)
	if err != nil {
		s.respondError(w, r, err, rs.gr, mustAccessor(obj).GetName())
		return
	}
	s.respond(w, r, http.StatusCreated, created)
}

// createObject runs the create path: metadata, defaults, admission,
// validation, managed fields, storage.
func (s *Server) createObject(ctx context.Context, rs *resourceStore, namespace string, obj runtime.Object, wr writeRequest) (runtime.Object, error) {
	accessor := mustAccessor(obj)
	if rs.res.Namespaced {
		switch {
		case accessor.GetNamespace() == "":
			accessor.SetNamespace(namespace)
		case accessor.GetNamespace() != namespace:
			return nil, badRequest("the namespace of the provided object (%s) does not match the namespace sent on the request (%s)", accessor.GetNamespace(), namespace)
		}
	}
	if accessor.GetResourceVersion() != "" {
		return nil, badRequest("metadata.resourceVersion must not be set on objects to be created")
	}
	if accessor.GetName() == "" && accessor.GetGenerateName() == "" {
		return nil, apierrors.NewInvalid(rs.gvk.GroupKind(), "", field.ErrorList{field.Required(field.NewPath("metadata", "name"), "name or generateName is required")})
	}
	prepareCreateMeta(rs, accessor, metav1.Now().Rfc3339Copy())
	if rs.res.Default != nil {
		rs.res.Default(obj)
	}
	if rs.res.PrepareForCreate != nil {
		rs.res.PrepareForCreate(obj)
	}
	if rs.res.PrepareForCreateWithUser != nil {
		user, _ := filters.UserFrom(ctx)
		rs.res.PrepareForCreateWithUser(obj, user)
	}
	if _, isService := obj.(*corev1.Service); isService {
		// Allocation has side effects: report an existing name before it.
		if _, err := rs.store.Get(ctx, rs.key(accessor.GetNamespace(), accessor.GetName())); err == nil {
			return nil, apierrors.NewAlreadyExists(rs.gr, accessor.GetName())
		}
	}
	if err := s.admitCreate(ctx, rs, obj, wr.dryRun); err != nil {
		return nil, err
	}
	adm := admissionRequest{rs: rs, op: admission.Create, obj: obj, namespace: accessor.GetNamespace(), name: accessor.GetName(),
		dryRun: wr.dryRun, options: createOptions(wr)}
	if err := s.mutateExt(ctx, adm); err != nil {
		s.releaseOnFailure(ctx, rs, obj, wr.dryRun)
		return nil, err
	}
	if errs := validateObject(rs, obj, nil, ""); len(errs) > 0 {
		s.releaseOnFailure(ctx, rs, obj, wr.dryRun)
		return nil, apierrors.NewInvalid(rs.gvk.GroupKind(), accessor.GetName(), errs)
	}
	managed := obj
	if !wr.keepManagedFields {
		var err error
		if managed, err = s.fields.update(rs, "", rs.res.New(), obj, wr.manager); err != nil {
			s.releaseOnFailure(ctx, rs, obj, wr.dryRun)
			return nil, err
		}
	}
	adm.obj = managed
	if err := s.validateExt(ctx, adm); err != nil {
		s.releaseOnFailure(ctx, rs, obj, wr.dryRun)
		return nil, err
	}
	if err := s.checkLimitRanges(ctx, rs, accessor.GetNamespace(), accessor.GetName(), managed); err != nil {
		s.releaseOnFailure(ctx, rs, obj, wr.dryRun)
		return nil, err
	}
	if err := s.admitQuota(ctx, rs, managed, wr.dryRun); err != nil {
		s.releaseOnFailure(ctx, rs, obj, wr.dryRun)
		return nil, err
	}
	if wr.dryRun {
		return managed, nil
	}
	created, err := rs.create(ctx, managed)
	for retry := 0; retry < 5 && errors.Is(err, storage.ErrExists) && accessor.GetGenerateName() != ""; retry++ {
		mustAccessor(managed).SetName(newName(rs.res.NameValidation, accessor.GetGenerateName()))
		created, err = rs.create(ctx, managed)
	}
	if err != nil {
		s.releaseOnFailure(ctx, rs, obj, false)
		return nil, err
	}
	return created, nil
}

func (s *Server) update(w http.ResponseWriter, r *http.Request, info requestInfo, rs *resourceStore, subresource string) {
	wr, obj, warnings, err := s.readWrite(r, rs)
	if err != nil {
		s.respondError(w, r, err, rs.gr, info.Name)
		return
	}
	addWarnings(w, warnings)
	accessor := mustAccessor(obj)
	if accessor.GetName() != info.Name {
		s.respondError(w, r, badRequest("the name of the object (%s) does not match the name on the URL (%s)", accessor.GetName(), info.Name), rs.gr, info.Name)
		return
	}
	if rs.res.Namespaced && accessor.GetNamespace() != "" && accessor.GetNamespace() != info.Namespace {
		s.respondError(w, r, badRequest("the namespace of the provided object (%s) does not match the namespace sent on the request (%s)", accessor.GetNamespace(), info.Namespace), rs.gr, info.Name)
		return
	}
	accessor.SetNamespace(info.Namespace)
	if (rs.custom != nil || rs.res.UpdateRequiresResourceVersion) && accessor.GetResourceVersion() == "" {
		// As upstream: custom resources (and a few built-in ones) take no
		// unconditional update (and one of an object that does not exist
		// is 404 first).
		var err error = apierrors.NewInvalid(rs.gvk.GroupKind(), info.Name, field.ErrorList{
			field.Invalid(field.NewPath("metadata", "resourceVersion"), accessor.GetResourceVersion(), "must be specified for an update")})
		if _, getErr := rs.get(r.Context(), info.Namespace, info.Name); getErr != nil {
			err = getErr
		}
		s.respondError(w, r, err, rs.gr, info.Name)
		return
	}
	code := http.StatusOK
	result, err := s.retryUpdate(r.Context(), rs, info, accessor.GetResourceVersion() == "", func(old runtime.Object) (runtime.Object, error) {
		if old == nil {
			return nil, nil
		}
		return obj.DeepCopyObject(), nil
	}, subresource, wr)
	if isNotFound(err) && subresource == "" && allowCreateOnUpdate(rs) {
		accessor.SetResourceVersion("")
		result, err = s.createObject(r.Context(), rs, info.Namespace, obj, wr)
		code = http.StatusCreated
	}
	if err != nil {
		s.respondError(w, r, err, rs.gr, info.Name)
		return
	}
	s.respond(w, r, code, result)
}

// allowCreateOnUpdate lists the resources a PUT may create, as upstream.
func allowCreateOnUpdate(rs *resourceStore) bool {
	switch rs.res.Resource {
	case "endpoints", "leases", "events", "roles", "rolebindings", "clusterroles", "clusterrolebindings", "runtimeclasses":
		return true
	}
	return false
}

// annotationsBumpGeneration is upstream's rule that a Deployment's generation
// also moves when its annotations change (rollbacks were annotations).
func annotationsBumpGeneration(rs *resourceStore, accessor, old metav1.Object) bool {
	return rs.gvk.Group == "apps" && rs.gvk.Kind == "Deployment" &&
		!apiequality.Semantic.DeepEqual(accessor.GetAnnotations(), old.GetAnnotations())
}

// internalUpdate is the subresource name of updates the server makes for a
// subresource (binding, finalize, scale): no field is reset.
const internalUpdate = "internal"

// mutateFunc produces the new object from the stored one.
type mutateFunc func(old runtime.Object) (runtime.Object, error)

// retryUpdate reads the stored object, applies mutate and writes the result,
// retrying on conflicts when the client did not ask for a specific version.
func (s *Server) retryUpdate(ctx context.Context, rs *resourceStore, info requestInfo, unconditional bool, mutate mutateFunc, subresource string, wr writeRequest) (runtime.Object, error) {
	for attempt := 0; ; attempt++ {
		old, err := rs.get(ctx, info.Namespace, info.Name)
		if err != nil {
			return nil, err
		}
		obj, err := mutate(old)
		if err != nil {
			return nil, err
		}
		result, err := s.updateObject(ctx, rs, old, obj, subresource, wr)
		if errors.Is(err, storage.ErrConflict) && unconditional && attempt < 20 {
			continue
		}
		return result, err
	}
}

// updateObject runs the update path for obj replacing old.
func (s *Server) updateObject(ctx context.Context, rs *resourceStore, old, obj runtime.Object, subresource string, wr writeRequest) (result runtime.Object, err error) {
	accessor, oldAccessor := mustAccessor(obj), mustAccessor(old)
	if rv := accessor.GetResourceVersion(); rv != "" && rv != oldAccessor.GetResourceVersion() {
		return nil, storage.ErrConflict
	}
	if uid := accessor.GetUID(); uid != "" && uid != oldAccessor.GetUID() {
		return nil, apierrors.NewConflict(rs.gr, accessor.GetName(), errors.New("Precondition failed: UID in precondition: "+string(uid)+", UID in object meta: "+string(oldAccessor.GetUID())))
	}
	keepServerMeta(accessor, oldAccessor)
	if accessor.GetResourceVersion() == "" {
		// An unconditional update replaces what is stored now.
		accessor.SetResourceVersion(oldAccessor.GetResourceVersion())
	}
	fieldSubresource := subresource
	whole, isWhole := rs.res.Subresources[subresource]
	switch {
	case isWhole:
		// Nothing is kept here: the subresource prepares the write below,
		// after mutating admission, as upstream's strategies do.
	case subresource == internalUpdate:
		fieldSubresource = ""
	case subresource == "":
		if rs.res.HasStatus {
			copyField(obj, old, "Status")
		}
	case subresource == "status":
		if rs.custom != nil {
			customresource.PrepareForStatusUpdate(obj, old)
			break
		}
		copyAllBut(obj, old, "Status")
		switch rs.res.StatusMeta {
		case registry.StatusKeepsMeta:
			keepSubresourceMeta(accessor, oldAccessor)
		case registry.StatusKeepsLabels:
			accessor.SetLabels(oldAccessor.GetLabels())
		}
	default:
		if sub, ok := rs.res.SpecSubresources[subresource]; ok {
			copyField(obj, old, "Status")
			keepSubresourceMeta(accessor, oldAccessor)
			sub.PrepareForUpdate(obj, old)
		}
	}
	if rs.res.Default != nil {
		rs.res.Default(obj)
	}
	// Other subresources (and internal updates) are admitted as what their
	// requests carry, by their handlers.
	runExt := subresource == "" || subresource == "status" || isWhole
	adm := admissionRequest{rs: rs, op: admission.Update, subresource: subresource, obj: obj, old: old,
		namespace: accessor.GetNamespace(), name: accessor.GetName(), dryRun: wr.dryRun, options: updateOptions(wr)}
	if pod, ok := obj.(*corev1.Pod); ok && subresource == "" && s.plugins.on(pluginDefaultTolerationSeconds) {
		// DefaultTolerationSeconds admits updates too: an update that
		// replaces the tolerations keeps the defaults, which validation
		// forbids removing.
		addDefaultTolerations(pod)
	}
	if runExt {
		if err := s.mutateExt(ctx, adm); err != nil {
			return nil, err
		}
	}
	switch {
	case isWhole:
		// The subresource's own preparation keeps what it may not change.
		whole.PrepareForUpdate(obj, old)
	case rs.res.PrepareForUpdate != nil && subresource != internalUpdate && (rs.custom == nil || subresource != "status"):
		// Internal updates (binding, finalize) change what clients may not;
		// a custom resource's status write was prepared above.
		rs.res.PrepareForUpdate(obj, old)
	}
	if svc, ok := obj.(*corev1.Service); ok && subresource == "" {
		// As upstream, a service's IP families are settled before the
		// update is validated.
		if err := s.initServiceFamilies(rs, svc, old.(*corev1.Service)); err != nil {
			return nil, err
		}
	}
	// Custom resources' PrepareForUpdate moves their generation; the
	// server's own updates (a binding) move none, as upstream's.
	if rs.res.HasStatus && rs.custom == nil && subresource != "status" && subresource != internalUpdate && (specChanged(obj, old) || annotationsBumpGeneration(rs, accessor, oldAccessor)) {
		accessor.SetGeneration(oldAccessor.GetGeneration() + 1)
	}
	if errs := validateObject(rs, obj, old, subresource); len(errs) > 0 {
		return nil, apierrors.NewInvalid(rs.gvk.GroupKind(), accessor.GetName(), errs)
	}
	if err := s.admitUpdate(ctx, rs, subresource, obj, old, wr.dryRun); err != nil {
		return nil, err
	}
	if !wr.dryRun {
		defer func() { s.settleServiceUpdate(ctx, obj, old, err != nil) }()
	}
	managed := obj
	if !wr.keepManagedFields {
		var err error
		if managed, err = s.fields.update(rs, fieldSubresource, old, obj, wr.manager); err != nil {
			return nil, err
		}
	}
	accessor = mustAccessor(managed)
	accessor.SetResourceVersion(oldAccessor.GetResourceVersion())
	if runExt {
		adm.obj = managed
		if err := s.validateExt(ctx, adm); err != nil {
			return nil, err
		}
	}
	if same, err := rs.sameStored(managed, old); err != nil {
		return nil, err
	} else if same {
		// Unless it was encrypted with a key that is no longer the first:
		// then rewriting it is the point (upstream's re-encryption is a
		// replace of every object with itself).
		stale, err := storage.Stale(ctx, rs.store, rs.key(accessor.GetNamespace(), accessor.GetName()))
		if err != nil || !stale || wr.dryRun {
			return old, err
		}
	}
	if wr.dryRun {
		return managed, nil
	}
	if deleteOnUpdate(oldAccessor, managed) {
		removed, err := rs.remove(ctx, accessor.GetNamespace(), accessor.GetName(), revisionOf(old))
		if err == nil {
			// What old held and managed does not is given back by
			// settleServiceUpdate.
			s.releaseResources(ctx, rs, managed)
		}
		return removed, err
	}
	return rs.update(ctx, managed, revisionOf(old))
}

// deleteOnUpdate is upstream's rule for an update that removes the last
// finalizer of an object being deleted: it is removed then, unless it still
// has a grace period to run (a pod whose kubelet has not yet confirmed that
// its containers stopped keeps terminating).
func deleteOnUpdate(old metav1.Object, updated runtime.Object) bool {
	if old.GetDeletionTimestamp() == nil || hasFinalizers(updated) {
		return false
	}
	grace := old.GetDeletionGracePeriodSeconds()
	return grace == nil || *grace == 0
}

// keepSubresourceMeta keeps the metadata a write through a subresource may
// not change, as upstream's ResetObjectMetaForStatus.
func keepSubresourceMeta(accessor, old metav1.Object) {
	accessor.SetLabels(old.GetLabels())
	accessor.SetAnnotations(old.GetAnnotations())
	accessor.SetFinalizers(old.GetFinalizers())
	accessor.SetOwnerReferences(old.GetOwnerReferences())
}

// sameStored is true when obj would be stored exactly as old is.
func (rs *resourceStore) sameStored(obj, old runtime.Object) (bool, error) {
	a, err := rs.encode(obj)
	if err != nil {
		return false, err
	}
	b, err := rs.encode(old)
	if err != nil {
		return false, err
	}
	return bytes.Equal(a, b), nil
}

// hasFinalizers is true while anything holds the object back from deletion:
// metadata.finalizers, and for namespaces spec.finalizers.
func hasFinalizers(obj runtime.Object) bool {
	if len(mustAccessor(obj).GetFinalizers()) > 0 {
		return true
	}
	return len(namespaceFinalizers(obj)) > 0
}
