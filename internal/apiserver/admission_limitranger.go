package apiserver

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// limitRangerAnnotation records which defaults LimitRanger gave a pod.
const limitRangerAnnotation = "kubernetes.io/limit-ranger"

// limitRanges are the LimitRanges of namespace.
func (s *Server) limitRanges(ctx context.Context, namespace string) ([]*corev1.LimitRange, error) {
	rs := s.resources[corev1.SchemeGroupVersion.WithResource("limitranges")]
	if rs == nil || namespace == "" || !s.plugins.on(pluginLimitRanger) {
		return nil, nil
	}
	kvs, _, err := rs.cache.List(ctx, 0, rs.listPrefix(namespace))
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.LimitRange, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, kv.Value.(*corev1.LimitRange))
	}
	return out, nil
}

// defaultPodLimits is upstream's LimitRanger mutation of a new pod: each
// container (and init container) without a request or limit of a resource
// gets its namespace's Container default, and the pod says so in the
// kubernetes.io/limit-ranger annotation.
func (s *Server) defaultPodLimits(ctx context.Context, pod *corev1.Pod) error {
	ranges, err := s.limitRanges(ctx, pod.Namespace)
	if err != nil {
		return err
	}
	for _, lr := range ranges {
		requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
		for _, item := range lr.Spec.Limits {
			if item.Type == corev1.LimitTypeContainer {
				for k, v := range item.DefaultRequest {
					requests[k] = v.DeepCopy()
				}
				for k, v := range item.Default {
					limits[k] = v.DeepCopy()
				}
			}
		}
		var notes []string
		for i := range pod.Spec.Containers {
			notes = defaultContainer(&pod.Spec.Containers[i], requests, limits, "container", notes)
		}
		for i := range pod.Spec.InitContainers {
			notes = defaultContainer(&pod.Spec.InitContainers[i], requests, limits, "init container", notes)
		}
		if len(notes) > 0 {
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[limitRangerAnnotation] = "LimitRanger plugin set: " + strings.Join(notes, "; ")
		}
	}
	return nil
}

// defaultContainer fills c's missing requests and limits and appends what
// it set to notes, in upstream's words.
func defaultContainer(c *corev1.Container, requests, limits corev1.ResourceList, what string, notes []string) []string {
	fill := func(dst *corev1.ResourceList, defaults corev1.ResourceList) []string {
		if *dst == nil {
			*dst = corev1.ResourceList{}
		}
		var set []string
		for k, v := range defaults {
			if _, ok := (*dst)[k]; !ok {
				(*dst)[k] = v.DeepCopy()
				set = append(set, string(k))
			}
		}
		slices.Sort(set)
		return set
	}
	setLimits := fill(&c.Resources.Limits, limits)
	setRequests := fill(&c.Resources.Requests, requests)
	if len(setRequests) > 0 {
		notes = append(notes, fmt.Sprintf("%s request for %s %s", strings.Join(setRequests, ", "), what, c.Name))
	}
	if len(setLimits) > 0 {
		notes = append(notes, fmt.Sprintf("%s limit for %s %s", strings.Join(setLimits, ", "), what, c.Name))
	}
	return notes
}

// checkLimitRanges is upstream's LimitRanger validation of a new pod or
// claim: the minimums, maximums and limit/request ratios of its
// namespace's LimitRanges, per container, per pod and per claim.
func (s *Server) checkLimitRanges(ctx context.Context, rs *resourceStore, namespace, name string, obj any) error {
	var errs []error
	switch o := obj.(type) {
	case *corev1.Pod:
		ranges, err := s.limitRanges(ctx, namespace)
		if err != nil {
			return err
		}
		for _, lr := range ranges {
			for _, item := range lr.Spec.Limits {
				switch item.Type {
				case corev1.LimitTypeContainer:
					for _, c := range append(slices.Clone(o.Spec.Containers), o.Spec.InitContainers...) {
						errs = append(errs, checkLimitItem(item, c.Resources.Requests, c.Resources.Limits)...)
					}
				case corev1.LimitTypePod:
					requests, limits := podTotals(o)
					errs = append(errs, checkLimitItem(item, requests, limits)...)
				}
			}
		}
	case *corev1.PersistentVolumeClaim:
		ranges, err := s.limitRanges(ctx, namespace)
		if err != nil {
			return err
		}
		for _, lr := range ranges {
			for _, item := range lr.Spec.Limits {
				if item.Type != corev1.LimitTypePersistentVolumeClaim {
					continue
				}
				for k, v := range item.Min {
					errs = append(errs, minConstraint(string(item.Type), k, v, o.Spec.Resources.Requests, nil))
				}
				for k, v := range item.Max {
					errs = append(errs, maxRequestConstraint(string(item.Type), k, v, o.Spec.Resources.Requests))
				}
			}
		}
	default:
		return nil
	}
	if err := utilerrors.NewAggregate(errs); err != nil {
		return apierrors.NewForbidden(rs.gr, name, err)
	}
	return nil
}

// checkLimitItem checks one Container or Pod limit against requests and
// limits; nil entries mean the constraint holds.
func checkLimitItem(item corev1.LimitRangeItem, requests, limits corev1.ResourceList) []error {
	var errs []error
	t := string(item.Type)
	for k, v := range item.Min {
		errs = append(errs, minConstraint(t, k, v, requests, limits))
	}
	for k, v := range item.Max {
		errs = append(errs, maxConstraint(t, k, v, requests, limits))
	}
	for k, v := range item.MaxLimitRequestRatio {
		errs = append(errs, ratioConstraint(t, k, v, requests, limits))
	}
	return errs
}

// podTotals are a pod's requests and limits as LimitRanger sums them: its
// containers', or an init container's where larger.
func podTotals(pod *corev1.Pod) (requests, limits corev1.ResourceList) {
	requests, limits = corev1.ResourceList{}, corev1.ResourceList{}
	for _, c := range pod.Spec.Containers {
		addResources(requests, c.Resources.Requests)
		addResources(limits, c.Resources.Limits)
	}
	for _, c := range pod.Spec.InitContainers {
		maxResources(requests, c.Resources.Requests)
		maxResources(limits, c.Resources.Limits)
	}
	return requests, limits
}

func addResources(list, add corev1.ResourceList) {
	for k, v := range add {
		q := list[k]
		q.Add(v)
		list[k] = q
	}
}

func maxResources(list, other corev1.ResourceList) {
	for k, v := range other {
		if q, ok := list[k]; !ok || v.Cmp(q) > 0 {
			list[k] = v.DeepCopy()
		}
	}
}

// milliValues compares in milli-units unless a value is too large for them.
func milliValues(qs ...resource.Quantity) []int64 {
	out := make([]int64, len(qs))
	milli := true
	for _, q := range qs {
		milli = milli && q.Value() <= resource.MaxMilliValue
	}
	for i, q := range qs {
		if milli {
			out[i] = q.MilliValue()
		} else {
			out[i] = q.Value()
		}
	}
	return out
}

func minConstraint(limitType string, name corev1.ResourceName, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	v := milliValues(req, lim, enforced)
	switch {
	case !hasReq:
		return fmt.Errorf("minimum %s usage per %s is %s.  No request is specified", name, limitType, enforced.String())
	case v[0] < v[2]:
		return fmt.Errorf("minimum %s usage per %s is %s, but request is %s", name, limitType, enforced.String(), req.String())
	case hasLim && v[1] < v[2]:
		return fmt.Errorf("minimum %s usage per %s is %s, but limit is %s", name, limitType, enforced.String(), lim.String())
	}
	return nil
}

func maxRequestConstraint(limitType string, name corev1.ResourceName, enforced resource.Quantity, requests corev1.ResourceList) error {
	req, hasReq := requests[name]
	v := milliValues(req, resource.Quantity{}, enforced)
	switch {
	case !hasReq:
		return fmt.Errorf("maximum %s usage per %s is %s.  No request is specified", name, limitType, enforced.String())
	case v[0] > v[2]:
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, limitType, enforced.String(), req.String())
	}
	return nil
}

func maxConstraint(limitType string, name corev1.ResourceName, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	v := milliValues(req, lim, enforced)
	switch {
	case !hasLim:
		return fmt.Errorf("maximum %s usage per %s is %s.  No limit is specified", name, limitType, enforced.String())
	case v[1] > v[2]:
		return fmt.Errorf("maximum %s usage per %s is %s, but limit is %s", name, limitType, enforced.String(), lim.String())
	case hasReq && v[0] > v[2]:
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, limitType, enforced.String(), req.String())
	}
	return nil
}

func ratioConstraint(limitType string, name corev1.ResourceName, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	v := milliValues(req, lim, enforced)
	if !hasReq || v[0] == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", name, limitType, enforced.String())
	}
	if !hasLim || v[1] == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", name, limitType, enforced.String())
	}
	ratio := float64(v[1]) / float64(v[0])
	observed, maxRatio := ratio, float64(enforced.Value())
	if enforced.Value() <= resource.MaxMilliValue {
		observed, maxRatio = ratio*1000, float64(enforced.MilliValue())
	}
	if observed > maxRatio {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but provided ratio is %f", name, limitType, enforced.String(), ratio)
	}
	return nil
}
