package apiserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"

	"orch/internal/quota"
	"orch/internal/storage"
)

// quotaRetries is how often a quota admission whose quota changed
// meanwhile is tried again.
const quotaRetries = 5

// admitQuota is upstream's ResourceQuota admission of a new object: each
// quota of its namespace that counts what the object uses (by its
// status.hard, once the quota controller set it) must have room for it,
// else the create is refused with upstream's message; the quotas'
// status.used then includes it (not for a dry run), so that the next
// object is measured against it before the controller recounts.
func (s *Server) admitQuota(ctx context.Context, rs *resourceStore, obj runtime.Object, dryRun bool) error {
	ns := mustAccessor(obj).GetNamespace()
	quotas := s.resources[corev1.SchemeGroupVersion.WithResource("resourcequotas")]
	if ns == "" || quotas == nil || !s.plugins.on(pluginResourceQuota) {
		return nil
	}
	// The quotas are read from etcd, not from the watch cache, so that a
	// quota or a status written just before is enforced already.
	page, err := quotas.store.List(ctx, quotas.listPrefix(ns), storage.ListOptions{})
	if err != nil {
		return err
	}
	// Every quota is checked before any is charged.
	var charged []*corev1.ResourceQuota
	for _, kv := range page.KVs {
		stored, err := quotas.decode(kv)
		if err != nil {
			return err
		}
		q := stored.(*corev1.ResourceQuota)
		used, err := chargeQuota(q, rs, obj)
		if err != nil {
			return apierrors.NewForbidden(rs.gr, mustAccessor(obj).GetName(), err)
		}
		if used != nil {
			q.Status.Used = used
			charged = append(charged, q)
		}
	}
	if dryRun {
		return nil
	}
	for _, q := range charged {
		if err := s.storeQuotaUsage(ctx, quotas, rs, obj, q); err != nil {
			return err
		}
	}
	return nil
}

// storeQuotaUsage writes the charged quota q if it did not change since it
// was read; when it did, the object is charged again to the quota as it
// is now, quotaRetries times at the most. Each quota is retried alone, so
// none is charged twice.
func (s *Server) storeQuotaUsage(ctx context.Context, quotas, rs *resourceStore, obj runtime.Object, q *corev1.ResourceQuota) error {
	for attempt := 0; ; attempt++ {
		_, err := quotas.update(ctx, q, revisionOf(q))
		if err == nil || !errors.Is(err, storage.ErrConflict) || attempt == quotaRetries {
			return err
		}
		fresh, err := quotas.get(ctx, q.Namespace, q.Name) // the cache may not have the write that won
		if err != nil {
			return err
		}
		q = fresh.(*corev1.ResourceQuota)
		used, err := chargeQuota(q, rs, obj)
		if err != nil {
			return apierrors.NewForbidden(rs.gr, mustAccessor(obj).GetName(), err)
		}
		if used == nil {
			return nil
		}
		q.Status.Used = used
	}
}

// chargeQuota is q's status.used with obj counted, nil when q does not
// count obj, or the error that refuses obj.
func chargeQuota(q *corev1.ResourceQuota, rs *resourceStore, obj runtime.Object) (corev1.ResourceList, error) {
	hard := q.Status.Hard
	pod, isPod := obj.(*corev1.Pod)
	if len(hard) == 0 || isPod && !quota.PodMatches(pod, q.Spec) {
		return nil, nil
	}
	if isPod {
		if err := podConstraints(pod, hard); err != nil {
			return nil, fmt.Errorf("failed quota: %s: %w", q.Name, err)
		}
	}
	delta := objectUsage(hard, rs, obj)
	if len(delta) == 0 {
		return nil, nil
	}
	var unknown []string
	for name := range delta {
		if _, ok := q.Status.Used[name]; !ok {
			unknown = append(unknown, string(name))
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, fmt.Errorf("status unknown for quota: %s, resources: %s", q.Name, strings.Join(unknown, ","))
	}
	used := q.Status.Used.DeepCopy()
	var exceeded []corev1.ResourceName
	for name, d := range delta {
		u := used[name]
		u.Add(d)
		used[name] = u
		if u.Cmp(hard[name]) > 0 {
			exceeded = append(exceeded, name)
		}
	}
	if len(exceeded) > 0 {
		return nil, fmt.Errorf("exceeded quota: %s, requested: %s, used: %s, limited: %s", q.Name,
			printResources(delta, exceeded), printResources(q.Status.Used, exceeded), printResources(hard, exceeded))
	}
	return used, nil
}

// objectUsage is what obj uses of the resources hard names, without zeros:
// its kind's usage (pods' requests and limits, services' node ports …) and
// its object count (count/<resource>.<group>).
func objectUsage(hard corev1.ResourceList, rs *resourceStore, obj runtime.Object) corev1.ResourceList {
	var o quota.Objects
	switch v := obj.(type) {
	case *corev1.Pod:
		o.Pods = []*corev1.Pod{v}
	case *corev1.Service:
		o.Services = []*corev1.Service{v}
	case *corev1.ConfigMap:
		o.ConfigMaps = 1
	case *corev1.Secret:
		o.Secrets = 1
	case *corev1.PersistentVolumeClaim:
		o.Claims = []*corev1.PersistentVolumeClaim{v}
	case *corev1.ReplicationController:
		o.Controllers = 1
	case *corev1.ResourceQuota:
		o.Quotas = 1
	}
	usage := quota.Usage(hard, o)
	count := corev1.ResourceName("count/" + rs.gr.Resource)
	if rs.gr.Group != "" {
		count += corev1.ResourceName("." + rs.gr.Group)
	}
	if _, ok := hard[count]; ok {
		usage[count] = *resource.NewQuantity(1, resource.DecimalSI)
	}
	for name, q := range usage {
		if q.IsZero() {
			delete(usage, name)
		}
	}
	return usage
}

// podConstraints is upstream's rule, kept for compatibility, that a quota
// of cpu or memory requests or limits needs every container to state them.
func podConstraints(pod *corev1.Pod, hard corev1.ResourceList) error {
	missing := map[corev1.ResourceName][]string{}
	check := func(c *corev1.Container) {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceRequestsCPU,
			corev1.ResourceRequestsMemory, corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory} {
			if _, ok := hard[name]; !ok {
				continue
			}
			list, base := c.Resources.Requests, strings.TrimPrefix(string(name), "requests.")
			if strings.HasPrefix(string(name), "limits.") {
				list, base = c.Resources.Limits, strings.TrimPrefix(string(name), "limits.")
			}
			if _, ok := list[corev1.ResourceName(base)]; !ok {
				missing[name] = append(missing[name], c.Name)
			}
		}
	}
	if pod.Spec.Resources != nil && (len(pod.Spec.Resources.Requests) > 0 || len(pod.Spec.Resources.Limits) > 0) {
		return nil // pod-level resources stand for the containers'
	}
	for i := range pod.Spec.Containers {
		check(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.InitContainers {
		check(&pod.Spec.InitContainers[i])
	}
	if len(missing) == 0 {
		return nil
	}
	var parts []string
	for name, containers := range missing {
		slices.Sort(containers)
		parts = append(parts, fmt.Sprintf("%s for: %s", name, strings.Join(slices.Compact(containers), ",")))
	}
	slices.Sort(parts)
	return fmt.Errorf("must specify %s", strings.Join(parts, "; "))
}

// printResources is upstream's name=quantity list of the names of list.
func printResources(list corev1.ResourceList, names []corev1.ResourceName) string {
	var parts []string
	for _, name := range names {
		q := list[name]
		parts = append(parts, fmt.Sprintf("%s=%s", name, q.String()))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}
