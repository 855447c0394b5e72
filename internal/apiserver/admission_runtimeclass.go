package apiserver

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"orch/internal/apiserver/admission/tolerations"
)

// admitRuntimeClass is upstream's RuntimeClass admission for a new pod: a
// class that does not exist is refused; the class's pod overhead becomes
// the pod's (a different one is refused, and so is an overhead without a
// class that defines one); its scheduling node selector and tolerations
// are merged into the pod's (a conflicting node selector is refused).
func (s *Server) admitRuntimeClass(ctx context.Context, pod *corev1.Pod) error {
	forbidden := func(format string, args ...any) error {
		return apierrors.NewForbidden(corev1.Resource("pods"), pod.Name, fmt.Errorf(format, args...))
	}
	var rc *nodev1.RuntimeClass
	if name := pod.Spec.RuntimeClassName; name != nil && *name != "" {
		classes := s.resources[nodev1.SchemeGroupVersion.WithResource("runtimeclasses")]
		if classes == nil {
			return forbidden("pod rejected: RuntimeClass %q not found", *name)
		}
		obj, err := classes.get(ctx, "", *name)
		if isNotFound(err) {
			return forbidden("pod rejected: RuntimeClass %q not found", *name)
		}
		if err != nil {
			return err
		}
		rc = obj.(*nodev1.RuntimeClass)
	}
	switch {
	case rc == nil || rc.Overhead == nil:
		if len(pod.Spec.Overhead) > 0 {
			return forbidden("pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")
		}
	case len(pod.Spec.Overhead) > 0 && !apiequality.Semantic.DeepEqual(rc.Overhead.PodFixed, pod.Spec.Overhead):
		return forbidden("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
	default:
		pod.Spec.Overhead = rc.Overhead.PodFixed.DeepCopy()
	}
	if rc == nil || rc.Scheduling == nil {
		return nil
	}
	if len(rc.Scheduling.NodeSelector) > 0 && pod.Spec.NodeSelector == nil {
		pod.Spec.NodeSelector = map[string]string{}
	}
	for k, v := range rc.Scheduling.NodeSelector {
		if podValue, ok := pod.Spec.NodeSelector[k]; ok && podValue != v {
			return forbidden("conflict: runtimeClass.scheduling.nodeSelector[%s] = %s; pod.spec.nodeSelector[%s] = %s", k, v, k, podValue)
		}
		pod.Spec.NodeSelector[k] = v
	}
	pod.Spec.Tolerations = tolerations.Merge(pod.Spec.Tolerations, rc.Scheduling.Tolerations)
	return nil
}
