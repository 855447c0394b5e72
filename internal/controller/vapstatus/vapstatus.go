// Package vapstatus is kube-controller-manager's ValidatingAdmissionPolicy
// status controller: the CEL expressions of each policy are type checked
// against the schemas (from the apiserver's OpenAPI v3) of the kinds the
// policy matches and of its paramKind, and the warnings are written to
// status.typeChecking with status.observedGeneration, once per generation.
// The checking is k8s.io/apiserver's own TypeChecker.
package vapstatus

import (
	"context"
	"log/slog"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	applyv1 "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	listers "k8s.io/client-go/listers/admissionregistration/v1"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"orch/internal/controller"
	"orch/internal/worker"
)

// Name is the controller's name in logs and its field manager, as upstream's.
const Name = "validatingadmissionpolicy-status"

// Controller writes the type checking status of ValidatingAdmissionPolicies.
type Controller struct {
	log      *slog.Logger
	client   kubernetes.Interface
	policies listers.ValidatingAdmissionPolicyLister
	synced   cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	mapper   *restmapper.DeferredDiscoveryRESTMapper
	checker  *validating.TypeChecker
}

// New builds the controller on the shared policy informer of ctx.
func New(ctx controller.Context) *Controller {
	ctx = ctx.WithDefaults()
	informer := ctx.Informers.Admissionregistration().V1().ValidatingAdmissionPolicies()
	discovery := ctx.Client.Discovery()
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery))
	c := &Controller{
		log: ctx.Log.With("controller", Name), client: ctx.Client, policies: informer.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "validatingadmissionpolicy-status", Clock: ctx.Clock}),
		mapper:  mapper,
		checker: &validating.TypeChecker{SchemaResolver: &resolver.ClientDiscoveryResolver{Discovery: discovery}, RestMapper: mapper},
	}
	enqueue := func(obj any) {
		if p, ok := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy); ok && needsCheck(p) {
			c.queue.Add(p.Name)
		}
	}
	reg, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }})
	if err != nil {
		// Only a stopped informer refuses handlers.
		c.log.Error("cannot watch validating admission policies", "err", err)
		return c
	}
	c.synced = reg.HasSynced
	return c
}

// needsCheck is true while a policy's generation has not been checked.
func needsCheck(p *admissionregistrationv1.ValidatingAdmissionPolicy) bool {
	return p.Generation > p.Status.ObservedGeneration
}

// Start runs until ctx ends. The caller starts the informer factory.
func (c *Controller) Start(ctx context.Context) error {
	var synced []cache.InformerSynced
	if c.synced != nil {
		synced = append(synced, c.synced)
	}
	return worker.Run(ctx, c.queue, worker.Errors(c.sync), worker.Options{Synced: synced, Log: c.log})
}

// sync type checks the policy name and applies its status.
func (c *Controller) sync(ctx context.Context, name string) error {
	policy, err := c.policies.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil || !needsCheck(policy) {
		return err
	}
	// Kinds (custom resources above all) come and go: look them up afresh.
	c.mapper.Reset()
	warnings := c.checker.Check(policy)
	checked := make([]*applyv1.ExpressionWarningApplyConfiguration, 0, len(warnings))
	for _, w := range warnings {
		checked = append(checked, applyv1.ExpressionWarning().WithFieldRef(w.FieldRef).WithWarning(w.Warning))
	}
	status := applyv1.ValidatingAdmissionPolicy(policy.Name).WithStatus(applyv1.ValidatingAdmissionPolicyStatus().
		WithObservedGeneration(policy.Generation).
		WithTypeChecking(applyv1.TypeChecking().WithExpressionWarnings(checked...)))
	_, err = c.client.AdmissionregistrationV1().ValidatingAdmissionPolicies().ApplyStatus(ctx, status, metav1.ApplyOptions{FieldManager: Name, Force: true})
	return err
}
