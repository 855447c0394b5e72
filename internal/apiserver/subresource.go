package apiserver

import (
	"errors"
	"fmt"
	"net/http"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"

	"orch/internal/apiserver/registry"
)

func (s *Server) serveSubresource(w http.ResponseWriter, r *http.Request, info requestInfo, rs *resourceStore) {
	fail := func(err error) { s.respondError(w, r, err, rs.gr, info.Name) }
	switch {
	case info.Subresource == "status" && rs.res.HasStatus, isObjectSubresource(rs, info.Subresource):
		switch info.Verb {
		case "get":
			s.get(w, r, info, rs)
		case "update":
			s.update(w, r, info, rs, info.Subresource)
		case "patch":
			s.patch(w, r, info, rs, info.Subresource)
		default:
			fail(apierrors.NewMethodNotSupported(rs.gr, info.Verb))
		}
	case info.Subresource == "scale" && rs.res.Scale != nil:
		s.serveScale(w, r, info, rs)
	case info.Subresource == "binding" && rs.res.Resource == "pods" && info.Verb == "create":
		s.bind(w, r, info, rs)
	case info.Subresource == "eviction" && rs.res.Resource == "pods" && info.Verb == "create":
		s.evict(w, r, info, rs)
	case info.Subresource == "finalize" && rs.res.Resource == "namespaces" && info.Verb == "update":
		s.finalizeNamespace(w, r, info, rs)
	case info.Subresource == "token" && rs.res.Resource == "serviceaccounts" && info.Verb == "create":
		s.createToken(w, r, info, rs)
	case isProxiedSubresource(rs.res.Resource, info.Subresource):
		s.serveProxied(w, r, info, rs)
	default:
		fail(apierrors.NewGenericServerResponse(http.StatusNotFound, info.Verb, rs.gr, info.Name, "", 0, false))
	}
}

// isObjectSubresource is true when name is one of the resource's
// subresources that take and return the whole object and write part of it
// (pods/ephemeralcontainers, certificatesigningrequests/approval).
func isObjectSubresource(rs *resourceStore, name string) bool {
	_, spec := rs.res.SpecSubresources[name]
	_, whole := rs.res.Subresources[name]
	return spec || whole
}

func isStreamingSubresource(name string) bool {
	switch name {
	case "log", "exec", "attach", "portforward", "proxy":
		return true
	}
	return false
}

// serveScale serves autoscaling/v1 Scale for the resource's replica count.
func (s *Server) serveScale(w http.ResponseWriter, r *http.Request, info requestInfo, rs *resourceStore) {
	ctx := r.Context()
	if info.Verb == "get" {
		obj, err := rs.get(ctx, info.Namespace, info.Name)
		if err != nil {
			s.respondError(w, r, err, rs.gr, info.Name)
			return
		}
		s.respond(w, r, http.StatusOK, scaleOf(rs, obj))
		return
	}
	if info.Verb != "update" && info.Verb != "patch" {
		s.respondError(w, r, apierrors.NewMethodNotSupported(rs.gr, info.Verb), rs.gr, info.Name)
		return
	}
	scaleStore := &resourceStore{res: scaleResource(rs), gvk: autoscalingv1.SchemeGroupVersion.WithKind("Scale"), gr: rs.gr, codecs: s.codecs}
	var wr writeRequest
	var desiredScale func(current *autoscalingv1.Scale) (runtime.Object, error)
	if info.Verb == "update" {
		var obj runtime.Object
		var err error
		if wr, obj, _, err = s.readWrite(r, scaleStore); err != nil {
			s.respondError(w, r, err, rs.gr, info.Name)
			return
		}
		desiredScale = func(*autoscalingv1.Scale) (runtime.Object, error) { return obj.DeepCopyObject(), nil }
	} else {
		p, err := s.readPatch(r)
		if err != nil {
			s.respondError(w, r, err, rs.gr, info.Name)
			return
		}
		wr = p.writeRequest
		desiredScale = func(current *autoscalingv1.Scale) (runtime.Object, error) {
			obj, _, err := s.applyPatch(scaleStore, "", p.patchType, current, p.data, metav1.FieldValidationIgnore, p.manager, p.force)
			return obj, err
		}
	}
	wr.keepManagedFields = false
	mutate := func(old runtime.Object) (runtime.Object, error) {
		current := scaleOf(rs, old)
		desired, err := desiredScale(current)
		if err != nil {
			return nil, err
		}
		scale := desired.(*autoscalingv1.Scale)
		if scale.ResourceVersion != "" && scale.ResourceVersion != current.ResourceVersion {
			return nil, apierrors.NewConflict(rs.gr, info.Name, errors.New(conflictMessage))
		}
		// Admission extensions see the Scale, not the object it changes,
		// in upstream's order: mutation, validation, validating admission.
		scale.SetGroupVersionKind(scaleStore.gvk)
		adm := admissionRequest{rs: rs, kind: scaleStore.gvk, op: admission.Update, subresource: "scale",
			obj: scale, old: current, namespace: info.Namespace, name: info.Name, dryRun: wr.dryRun, options: updateOptions(wr)}
		if err := s.mutateExt(ctx, adm); err != nil {
			return nil, err
		}
		if scale.Spec.Replicas < 0 {
			return nil, unprocessable("spec.replicas: Invalid value: %d: must be greater than or equal to 0", scale.Spec.Replicas)
		}
		if err := s.validateExt(ctx, adm); err != nil {
			return nil, err
		}
		obj := old.DeepCopyObject()
		rs.res.Scale.SetSpecReplicas(obj, scale.Spec.Replicas)
		return obj, nil
	}
	result, err := s.retryUpdate(withExtAdmitted(ctx), rs, info, true, mutate, "", wr)
	if err != nil {
		s.respondError(w, r, err, rs.gr, info.Name)
		return
	}
	s.respond(w, r, http.StatusOK, scaleOf(rs, result))
}

func scaleOf(rs *resourceStore, obj runtime.Object) *autoscalingv1.Scale {
	accessor := mustAccessor(obj)
	scale := &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: accessor.GetName(), Namespace: accessor.GetNamespace(), UID: accessor.GetUID(),
			ResourceVersion: accessor.GetResourceVersion(), CreationTimestamp: accessor.GetCreationTimestamp()},
		Spec:   autoscalingv1.ScaleSpec{Replicas: rs.res.Scale.SpecReplicas(obj)},
		Status: autoscalingv1.ScaleStatus{Replicas: rs.res.Scale.StatusReplicas(obj), Selector: rs.res.Scale.Selector(obj)},
	}
	scale.APIVersion, scale.Kind = autoscalingv1.SchemeGroupVersion.String(), "Scale"
	return scale
}

// bind is pods/binding: the scheduler assigns a pod to a node.
func (s *Server) bind(w http.ResponseWriter, r *http.Request, info requestInfo, rs *resourceStore) {
	data, err := readBody(r)
	if err != nil {
		s.respondError(w, r, err, rs.gr, info.Name)
		return
	}
	binding := &corev1.Binding{}
	if err := s.decodeInto(r, data, binding); err != nil {
		s.respondError(w, r, err, rs.gr, info.Name)
		return
	}
	if binding.Target.Name == "" || (binding.Target.Kind != "" && binding.Target.Kind != "Node") {
		s.respondError(w, r, unprocessable("target: a binding needs a Node target with a name"), rs.gr, info.Name)
		return
	}
	wr, err := parseWriteRequest(r)
	if err != nil {
		s.respondError(w, r, err, rs.gr, info.Name)
		return
	}
	binding.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Binding"))
	err = s.admitExt(r.Context(), admissionRequest{rs: rs, kind: binding.GroupVersionKind(), op: admission.Create, subresource: "binding",
		obj: binding, namespace: info.Namespace, name: info.Name, dryRun: wr.dryRun, options: createOptions(wr)})
	if err != nil {
		s.respondError(w, r, err, rs.gr, info.Name)
		return
	}
	if wr.dryRun {
		s.respond(w, r, http.StatusCreated, &metav1.Status{Status: metav1.StatusSuccess, Code: http.StatusCreated})
		return
	}
	_, err = s.retryUpdate(r.Context(), rs, info, binding.ResourceVersion == "", func(old runtime.Object) (runtime.Object, error) {
		pod := old.DeepCopyObject().(*corev1.Pod)
		if pod.DeletionTimestamp != nil {
			return nil, apierrors.NewConflict(rs.gr, pod.Name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", pod.Name))
		}
		if pod.Spec.NodeName != "" {
			return nil, apierrors.NewConflict(rs.gr, pod.Name, fmt.Errorf("pod %s is already assigned to node %q", pod.Name, pod.Spec.NodeName))
		}
		if binding.UID != "" && binding.UID != pod.UID {
			return nil, apierrors.NewConflict(rs.gr, pod.Name, fmt.Errorf("the binding's UID does not match pod %s", pod.Name))
		}
		pod.Spec.NodeName = binding.Target.Name
		pod.Status.NominatedNodeName = "" // as upstream 1.37: a bound pod is nominated nowhere
		for k, v := range binding.Annotations {
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[k] = v
		}
		setPodScheduled(pod)
		return pod, nil
	}, internalUpdate, wr)
	if err != nil {
		s.respondError(w, r, err, rs.gr, info.Name)
		return
	}
	s.respond(w, r, http.StatusCreated, &metav1.Status{Status: metav1.StatusSuccess, Code: http.StatusCreated})
}

// setPodScheduled writes the PodScheduled=True condition; the status update
// goes through the main resource here, so bind writes it directly.
func setPodScheduled(pod *corev1.Pod) {
	now := metav1.Now().Rfc3339Copy()
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodScheduled {
			pod.Status.Conditions[i].Status = corev1.ConditionTrue
			pod.Status.Conditions[i].LastTransitionTime = now
			pod.Status.Conditions[i].Reason, pod.Status.Conditions[i].Message = "", ""
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now})
}

// finalizeNamespace is namespaces/finalize: only spec.finalizers change.
func (s *Server) finalizeNamespace(w http.ResponseWriter, r *http.Request, info requestInfo, rs *resourceStore) {
	data, err := readBody(r)
	if err != nil {
		s.respondError(w, r, err, rs.gr, info.Name)
		return
	}
	obj, _, err := s.decodeObject(r, rs, data)
	if err != nil {
		s.respondError(w, r, err, rs.gr, info.Name)
		return
	}
	wanted := obj.(*corev1.Namespace)
	wr := writeRequest{manager: managerFromUserAgent(r.UserAgent())}
	result, err := s.retryUpdate(r.Context(), rs, info, true, func(old runtime.Object) (runtime.Object, error) {
		ns := old.DeepCopyObject().(*corev1.Namespace)
		ns.Spec.Finalizers = wanted.Spec.Finalizers
		return ns, nil
	}, internalUpdate, wr)
	if err != nil {
		s.respondError(w, r, err, rs.gr, info.Name)
		return
	}
	s.respond(w, r, http.StatusOK, result)
}

// scaleResource describes autoscaling/v1 Scale for decoding scale requests.
func scaleResource(rs *resourceStore) registry.Resource {
	return registry.Resource{
		GroupVersion: autoscalingv1.SchemeGroupVersion, Resource: rs.res.Resource, Kind: "Scale", Namespaced: true,
		New: func() runtime.Object { return &autoscalingv1.Scale{} },
	}
}
