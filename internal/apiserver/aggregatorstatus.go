package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationv1helper "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/helper"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"orch/internal/apiserver/authz"
)

// availabilityInterval is how often every APIService is checked again
// besides when one changes.
const availabilityInterval = 30 * time.Second

// runAvailability keeps the Available condition of every APIService and
// the discovery of the remote ones, as upstream's availability
// controllers: a local APIService is available; a remote one is when its
// service has a ready endpoint that answers GET /apis/GROUP/VERSION.
func (a *aggregator) runAvailability(ctx context.Context) error {
	client, err := aggregatorclient.NewForConfig(a.s.loopbackConfig())
	if err != nil {
		return err
	}
	tick := time.NewTicker(availabilityInterval)
	defer tick.Stop()
	for {
		a.mu.RLock()
		services := make([]*apiregistrationv1.APIService, 0, len(a.byName))
		for _, svc := range a.byName {
			services = append(services, svc)
		}
		a.mu.RUnlock()
		for _, svc := range services {
			cond, disc := a.check(ctx, svc)
			if disc != nil {
				a.mu.Lock()
				if a.remote[groupVersionOf(svc)] != nil {
					a.discovery[groupVersionOf(svc)] = disc
				}
				a.mu.Unlock()
			}
			if err := setAvailable(ctx, client, svc, cond); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				a.s.log.Warn("cannot write the status of an APIService", "apiservice", svc.Name, "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-a.changed:
		case <-tick.C:
		}
	}
}

// setAvailable writes cond into svc's status unless it says that already.
func setAvailable(ctx context.Context, client aggregatorclient.Interface, svc *apiregistrationv1.APIService, cond apiregistrationv1.APIServiceCondition) error {
	for _, c := range svc.Status.Conditions {
		if c.Type == cond.Type && c.Status == cond.Status && c.Reason == cond.Reason && c.Message == cond.Message {
			return nil
		}
	}
	updated := svc.DeepCopy()
	cond.LastTransitionTime = metav1.Now()
	kept := updated.Status.Conditions[:0]
	for _, c := range updated.Status.Conditions {
		if c.Type != cond.Type {
			kept = append(kept, c)
		} else if c.Status == cond.Status {
			cond.LastTransitionTime = c.LastTransitionTime
		}
	}
	updated.Status.Conditions = append(kept, cond)
	_, err := client.ApiregistrationV1().APIServices().UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	return err
}

// check is svc's Available condition now, with what a remote group version
// serves when it answered.
func (a *aggregator) check(ctx context.Context, svc *apiregistrationv1.APIService) (apiregistrationv1.APIServiceCondition, *apidiscoveryv2.APIVersionDiscovery) {
	if svc.Spec.Service == nil {
		return apiregistrationv1helper.NewLocalAvailableAPIServiceCondition(), nil
	}
	cond := apiregistrationv1.APIServiceCondition{Type: apiregistrationv1.Available}
	cond.Status = apiregistrationv1.ConditionFalse
	ref := svc.Spec.Service
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	target, transport, err := a.backend(ctx, svc)
	switch {
	case apierrors.IsNotFound(err):
		cond.Reason, cond.Message = "ServiceNotFound", fmt.Sprintf("service/%s in %q is not present", ref.Name, ref.Namespace)
		return cond, nil
	case apierrors.IsServiceUnavailable(err): // no such port, no ready endpoint
		cond.Reason, cond.Message = "MissingEndpoints", err.Error()
		return cond, nil
	case err != nil: // e.g. a caBundle with no certificate
		cond.Reason, cond.Message = "FailedDiscoveryCheck", err.Error()
		return cond, nil
	}
	target.Path = "/apis/" + svc.Spec.Group + "/" + svc.Spec.Version
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		cond.Reason, cond.Message = "FailedDiscoveryCheck", err.Error()
		return cond, nil
	}
	// As upstream: the check acts as a member of system:masters, so
	// authorization cannot fail it.
	setUserHeaders(req.Header, authz.User{Name: "system:kube-aggregator", Groups: []string{authz.SystemPrivilegedGroup}})
	req.Header.Set("Accept", "application/json")
	resp, err := (&http.Client{Transport: transport, Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		cond.Reason, cond.Message = "FailedDiscoveryCheck", fmt.Sprintf("failing or missing response from %s: %v", target, err)
		return cond, nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil || resp.StatusCode < 200 || resp.StatusCode > 299 {
		cond.Reason, cond.Message = "FailedDiscoveryCheck", fmt.Sprintf("failing or missing response from %s: bad status from %s: %d", target, target, resp.StatusCode)
		return cond, nil
	}
	cond.Status, cond.Reason, cond.Message = apiregistrationv1.ConditionTrue, "Passed", "all checks passed"
	var list metav1.APIResourceList
	if json.Unmarshal(body, &list) != nil {
		return cond, nil
	}
	return cond, versionDiscovery(svc, &list)
}

// versionDiscovery is the aggregated discovery of a group version from its
// plain resource list.
func versionDiscovery(svc *apiregistrationv1.APIService, list *metav1.APIResourceList) *apidiscoveryv2.APIVersionDiscovery {
	v := &apidiscoveryv2.APIVersionDiscovery{Version: svc.Spec.Version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
	index := map[string]int{}
	for _, r := range list.APIResources {
		if strings.Contains(r.Name, "/") {
			continue
		}
		scope := apidiscoveryv2.ScopeCluster
		if r.Namespaced {
			scope = apidiscoveryv2.ScopeNamespace
		}
		index[r.Name] = len(v.Resources)
		v.Resources = append(v.Resources, apidiscoveryv2.APIResourceDiscovery{Resource: r.Name, SingularResource: r.SingularName,
			Scope: scope, Verbs: r.Verbs, ShortNames: r.ShortNames, Categories: r.Categories,
			ResponseKind: &metav1.GroupVersionKind{Group: svc.Spec.Group, Version: svc.Spec.Version, Kind: r.Kind}})
	}
	for _, r := range list.APIResources {
		parent, sub, ok := strings.Cut(r.Name, "/")
		i, found := index[parent]
		if !ok || !found {
			continue
		}
		group, version := r.Group, r.Version
		if group == "" && version == "" {
			group, version = svc.Spec.Group, svc.Spec.Version
		}
		v.Resources[i].Subresources = append(v.Resources[i].Subresources, apidiscoveryv2.APISubresourceDiscovery{Subresource: sub,
			Verbs: r.Verbs, ResponseKind: &metav1.GroupVersionKind{Group: group, Version: version, Kind: r.Kind}})
	}
	return v
}
