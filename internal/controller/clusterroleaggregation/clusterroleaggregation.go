// Package clusterroleaggregation fills the rules of every ClusterRole that
// has an aggregationRule, as upstream's ClusterRole aggregation controller
// does: its rules become those of every other ClusterRole matching one of
// its clusterRoleSelectors (selector by selector, the matching roles in
// name order, their rules in order, each rule once). The rules are written
// with server-side apply, forced, as field manager
// clusterrole-aggregation-controller, and only when they differ. This is
// how admin, edit and view take in the rules of roles labelled
// rbac.authorization.k8s.io/aggregate-to-*.
package clusterroleaggregation

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"orch/internal/controller"
	"orch/internal/worker"
)

// Name is the controller's name in logs.
const Name = "clusterroleaggregation"

// FieldManager is the manager of the rules it writes, upstream's (users
// see it in apply conflicts on .rules).
const FieldManager = "clusterrole-aggregation-controller"

// workers is upstream's number of workers for this controller.
const workers = 5

// Controller aggregates ClusterRoles.
type Controller struct {
	log    *slog.Logger
	client kubernetes.Interface
	roles  rbaclisters.ClusterRoleLister
	synced []cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
}

// New builds the controller on the shared ClusterRole informer of
// ctx.Informers.
func New(ctx controller.Context) *Controller {
	ctx = ctx.WithDefaults()
	roles := ctx.Informers.Rbac().V1().ClusterRoles()
	c := &Controller{
		log:    ctx.Log.With("controller", Name),
		client: ctx.Client,
		roles:  roles.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: Name, Clock: ctx.Clock}),
	}
	// Which aggregating roles a change touches is not worth working out:
	// the roles are few, so every change looks at all of them.
	enqueue := func(any) { c.enqueueAggregating() }
	reg, err := roles.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, _ any) { c.enqueueAggregating() },
		DeleteFunc: enqueue,
	})
	if err != nil {
		c.log.Error("cannot watch ClusterRoles", "err", err)
		return c
	}
	c.synced = []cache.InformerSynced{reg.HasSynced}
	return c
}

// Start runs the workers until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	return worker.Run(ctx, c.queue, worker.Errors(c.sync), worker.Options{Workers: workers, Synced: c.synced, Log: c.log})
}

// enqueueAggregating adds every ClusterRole with an aggregationRule.
func (c *Controller) enqueueAggregating() {
	all, err := c.roles.List(labels.Everything())
	if err != nil {
		c.log.Error("cannot list ClusterRoles", "err", err)
		return
	}
	for _, r := range all {
		if r.AggregationRule != nil {
			c.queue.Add(r.Name)
		}
	}
}

// sync writes the aggregated rules of ClusterRole name when they differ
// from its rules.
func (c *Controller) sync(ctx context.Context, name string) error {
	role, err := c.roles.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if role.AggregationRule == nil {
		return nil
	}
	all, err := c.roles.List(labels.Everything())
	if err != nil {
		return err
	}
	rules, err := Rules(role, all)
	if err != nil {
		// Only a change to the role can mend its selectors, and that enqueues it.
		return worker.Terminal(err)
	}
	if apiequality.Semantic.DeepEqual(rules, role.Rules) {
		return nil
	}
	apply := rbacv1ac.ClusterRole(name)
	for _, r := range rules {
		apply.WithRules(applyRule(r))
	}
	_, err = c.client.RbacV1().ClusterRoles().Apply(ctx, apply, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return fmt.Errorf("write the aggregated rules of ClusterRole %q: %w", name, err)
	}
	c.log.Info("aggregated rules", "clusterrole", name, "rules", len(rules))
	return nil
}

// Rules are the aggregated rules of role among all ClusterRoles: for each
// of its selectors in order, the rules of the other roles it matches in
// name order, each rule kept the first time it appears.
func Rules(role *rbacv1.ClusterRole, all []*rbacv1.ClusterRole) ([]rbacv1.PolicyRule, error) {
	sorted := slices.Clone(all)
	slices.SortFunc(sorted, func(a, b *rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
	rules := []rbacv1.PolicyRule{}
	for i := range role.AggregationRule.ClusterRoleSelectors {
		selector, err := metav1.LabelSelectorAsSelector(&role.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			return nil, fmt.Errorf("ClusterRole %q: clusterRoleSelectors[%d] is not a valid label selector: %w", role.Name, i, err)
		}
		for _, other := range sorted {
			if other.Name == role.Name || !selector.Matches(labels.Set(other.Labels)) {
				continue
			}
			for _, rule := range other.Rules {
				if !slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool { return apiequality.Semantic.DeepEqual(r, rule) }) {
					rules = append(rules, *rule.DeepCopy())
				}
			}
		}
	}
	return rules, nil
}

// applyRule is r as an apply configuration.
func applyRule(r rbacv1.PolicyRule) *rbacv1ac.PolicyRuleApplyConfiguration {
	return rbacv1ac.PolicyRule().
		WithVerbs(r.Verbs...).
		WithAPIGroups(r.APIGroups...).
		WithResources(r.Resources...).
		WithResourceNames(r.ResourceNames...).
		WithNonResourceURLs(r.NonResourceURLs...)
}
