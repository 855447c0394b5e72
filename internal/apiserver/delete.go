package apiserver

import (
	"context"
	"errors"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apiserver/pkg/admission"

	"orch/internal/apiserver/admission/noderestriction"
	"orch/internal/storage"
)

// deleteOptions reads DeleteOptions from the body (if any) or the query.
// Upstream takes them in the request's group version too, which for a
// custom resource (a client deleting it with DeleteOptions of its object's
// apiVersion, as controller-runtime does) is not in orch's scheme: those
// are decoded as meta.k8s.io/v1's, which are the same.
func (s *Server) deleteOptions(r *http.Request, gv schema.GroupVersion) (metav1.DeleteOptions, error) {
	var opts metav1.DeleteOptions
	data, err := readBody(r)
	if err != nil {
		return opts, err
	}
	var tm metav1.TypeMeta
	if len(data) > 0 && data[0] == '{' && utiljson.Unmarshal(data, &tm) == nil && tm.Kind == "DeleteOptions" &&
		tm.APIVersion == gv.String() && !s.codecs.scheme.Recognizes(gv.WithKind(tm.Kind)) {
		if err := utiljson.Unmarshal(data, &opts); err != nil {
			return opts, badRequest("the body is not a valid DeleteOptions: %v", err)
		}
		opts.TypeMeta = metav1.TypeMeta{}
	} else if len(data) > 0 {
		if err := s.decodeInto(r, data, &opts); err != nil {
			return opts, err
		}
	} else if err := s.decodeParams(r, &opts); err != nil {
		return opts, badRequest("invalid delete options: %v", err)
	}
	if q := r.URL.Query()["dryRun"]; len(q) > 0 && len(opts.DryRun) == 0 {
		opts.DryRun = q
	}
	for _, d := range opts.DryRun {
		if d != metav1.DryRunAll {
			return opts, badRequest("dryRun must be %q, not %q", metav1.DryRunAll, d)
		}
	}
	if opts.GracePeriodSeconds != nil && *opts.GracePeriodSeconds < 0 {
		zero := int64(0)
		opts.GracePeriodSeconds = &zero
	}
	if p := opts.PropagationPolicy; p != nil && *p != metav1.DeletePropagationOrphan &&
		*p != metav1.DeletePropagationBackground && *p != metav1.DeletePropagationForeground {
		return opts, badRequest("propagationPolicy must be Orphan, Background or Foreground, not %q", *p)
	}
	if opts.PropagationPolicy != nil && opts.OrphanDependents != nil {
		return opts, badRequest("orphanDependents and propagationPolicy cannot both be set")
	}
	return opts, nil
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request, info requestInfo, rs *resourceStore) {
	opts, err := s.deleteOptions(r, info.GroupVersion)
	if err != nil {
		s.respondError(w, r, err, rs.gr, info.Name)
		return
	}
	obj, deleted, err := s.deleteObject(r.Context(), rs, info.Namespace, info.Name, opts)
	if err != nil {
		s.respondError(w, r, err, rs.gr, info.Name)
		return
	}
	// As upstream: 202 only for an object that remains while the client
	// asked for its dependents' deletion with orphanDependents=false; a
	// pod's graceful deletion or finalizers that hold it back are a 200.
	code := http.StatusOK
	if !deleted && opts.OrphanDependents != nil && !*opts.OrphanDependents {
		code = http.StatusAccepted
	}
	s.respond(w, r, code, obj)
}

// deleteObject deletes now, or marks the object for deletion when finalizers
// or a pod's grace period hold it back. deleted tells which happened.
func (s *Server) deleteObject(ctx context.Context, rs *resourceStore, namespace, name string, opts metav1.DeleteOptions) (runtime.Object, bool, error) {
	for attempt := 0; ; attempt++ {
		old, err := rs.get(ctx, namespace, name)
		if err != nil {
			return nil, false, err
		}
		if err := checkPreconditions(rs, old, opts.Preconditions); err != nil {
			return nil, false, err
		}
		if err := s.admitNode(ctx, noderestriction.Delete, rs, "", namespace, name, old, old); err != nil {
			return nil, false, err
		}
		adm := admissionRequest{rs: rs, op: admission.Delete, old: old, namespace: namespace, name: name,
			dryRun: len(opts.DryRun) > 0, options: deleteOptionsObject(opts)}
		if err := s.mutateExt(ctx, adm); err != nil {
			return nil, false, err
		}
		if err := s.validateExt(ctx, adm); err != nil {
			return nil, false, err
		}
		obj, deleted, err := s.deleteOnce(ctx, rs, old, opts)
		if errors.Is(err, storage.ErrConflict) && attempt < 20 {
			continue
		}
		return obj, deleted, err
	}
}

func (s *Server) deleteOnce(ctx context.Context, rs *resourceStore, old runtime.Object, opts metav1.DeleteOptions) (runtime.Object, bool, error) {
	dryRun := len(opts.DryRun) > 0
	marked := old.DeepCopyObject()
	accessor := mustAccessor(marked)
	addPropagationFinalizer(accessor, opts)
	if crd, ok := marked.(*apiextensionsv1.CustomResourceDefinition); ok {
		markCRDTerminating(crd)
	}
	grace := gracePeriod(marked, opts)
	if !hasFinalizers(marked) && grace == 0 {
		if dryRun {
			return old, true, nil
		}
		obj, err := rs.remove(ctx, accessor.GetNamespace(), accessor.GetName(), revisionOf(old))
		if err == nil {
			s.releaseResources(ctx, rs, obj)
		}
		return obj, err == nil, err
	}
	if accessor.GetDeletionTimestamp() == nil {
		at := metav1.NewTime(time.Now().Add(time.Duration(grace) * time.Second)).Rfc3339Copy()
		accessor.SetDeletionTimestamp(&at)
		accessor.SetDeletionGracePeriodSeconds(&grace)
		if accessor.GetGeneration() > 0 {
			accessor.SetGeneration(accessor.GetGeneration() + 1)
		}
	} else if current := accessor.GetDeletionGracePeriodSeconds(); current != nil && grace < *current {
		at := metav1.NewTime(time.Now().Add(time.Duration(grace) * time.Second)).Rfc3339Copy()
		accessor.SetDeletionTimestamp(&at)
		accessor.SetDeletionGracePeriodSeconds(&grace)
	}
	if ns, ok := marked.(*corev1.Namespace); ok {
		ns.Status.Phase = corev1.NamespaceTerminating
	}
	if dryRun {
		return marked, false, nil
	}
	if mustAccessor(old).GetDeletionTimestamp() != nil && equality.Semantic.DeepEqual(old, marked) {
		// Being deleted already, and this delete changes nothing: as
		// upstream's pending graceful deletion, nothing is written (a
		// write would make every client's next update of it conflict).
		return old, false, nil
	}
	obj, err := rs.update(ctx, marked, revisionOf(old))
	return obj, false, err
}

// gracePeriod is how long a pod bound to a node is given to stop (0 for
// everything else, and for pods that never ran or have finished).
func gracePeriod(obj runtime.Object, opts metav1.DeleteOptions) int64 {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return 0
	}
	if opts.GracePeriodSeconds != nil {
		return *opts.GracePeriodSeconds
	}
	if pod.DeletionGracePeriodSeconds != nil {
		return *pod.DeletionGracePeriodSeconds
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return corev1.DefaultTerminationGracePeriodSeconds
}

// addPropagationFinalizer records Orphan and Foreground propagation as the
// finalizers the garbage collector acts on.
func addPropagationFinalizer(accessor metav1.Object, opts metav1.DeleteOptions) {
	policy := metav1.DeletePropagationBackground
	if opts.PropagationPolicy != nil {
		policy = *opts.PropagationPolicy
	} else if opts.OrphanDependents != nil && *opts.OrphanDependents {
		policy = metav1.DeletePropagationOrphan
	}
	var finalizer string
	switch policy {
	case metav1.DeletePropagationOrphan:
		finalizer = metav1.FinalizerOrphanDependents
	case metav1.DeletePropagationForeground:
		finalizer = metav1.FinalizerDeleteDependents
	default:
		return
	}
	if accessor.GetDeletionTimestamp() != nil {
		return
	}
	for _, f := range accessor.GetFinalizers() {
		if f == finalizer {
			return
		}
	}
	accessor.SetFinalizers(append(accessor.GetFinalizers(), finalizer))
}

func checkPreconditions(rs *resourceStore, obj runtime.Object, pre *metav1.Preconditions) error {
	if pre == nil {
		return nil
	}
	accessor := mustAccessor(obj)
	if pre.UID != nil && *pre.UID != accessor.GetUID() {
		return apierrors.NewConflict(rs.gr, accessor.GetName(), errors.New("Precondition failed: UID in precondition: "+string(*pre.UID)+", UID in object meta: "+string(accessor.GetUID())))
	}
	if pre.ResourceVersion != nil && *pre.ResourceVersion != accessor.GetResourceVersion() {
		return apierrors.NewConflict(rs.gr, accessor.GetName(), errors.New("Precondition failed: ResourceVersion in precondition: "+*pre.ResourceVersion+", ResourceVersion in object meta: "+accessor.GetResourceVersion()))
	}
	return nil
}

func (s *Server) deleteCollection(w http.ResponseWriter, r *http.Request, info requestInfo, rs *resourceStore) {
	var listOpts metav1.ListOptions
	if err := s.decodeParams(r, &listOpts); err != nil {
		s.respondError(w, r, badRequest("invalid list options: %v", err), rs.gr, "")
		return
	}
	opts, err := s.deleteOptions(r, info.GroupVersion)
	if err != nil {
		s.respondError(w, r, err, rs.gr, "")
		return
	}
	sel, err := rs.newSelection(listOpts.LabelSelector, listOpts.FieldSelector)
	if err != nil {
		s.respondError(w, r, err, rs.gr, "")
		return
	}
	listOpts.Limit, listOpts.Continue, listOpts.ResourceVersion, listOpts.ResourceVersionMatch = 0, "", "", ""
	list, err := s.listObjects(r.Context(), rs, info.Namespace, listOpts, sel)
	if err != nil {
		s.respondError(w, r, err, rs.gr, "")
		return
	}
	var items []runtime.Object
	eachItem(list, func(obj runtime.Object) { items = append(items, obj) })
	for _, item := range items {
		accessor := mustAccessor(item)
		_, _, err := s.deleteObject(r.Context(), rs, accessor.GetNamespace(), accessor.GetName(), opts)
		if err != nil && !isNotFound(err) {
			s.respondError(w, r, err, rs.gr, accessor.GetName())
			return
		}
	}
	s.respond(w, r, http.StatusOK, list)
}
