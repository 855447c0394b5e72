// Package serviceaccount is the service account controller of
// kube-controller-manager: every active namespace has a ServiceAccount named
// "default", created when the namespace appears and again whenever it is
// deleted. Namespaces being deleted are left alone.
package serviceaccount

import (
	"context"
	"errors"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"orch/internal/controller"
	"orch/internal/worker"
)

// Name is the controller's name in logs.
const Name = "serviceaccount"

// Workers is how many namespaces are synced at once, as upstream.
const Workers = 1

// DefaultServiceAccounts are the service accounts every namespace gets.
var DefaultServiceAccounts = []string{"default"}

// Controller keeps the default service accounts in every namespace.
type Controller struct {
	log      *slog.Logger
	client   kubernetes.Interface
	nsLister corelisters.NamespaceLister
	saLister corelisters.ServiceAccountLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	// ensure names the service accounts each namespace must have.
	ensure []string
}

// New builds the controller on the shared namespace and service account
// informers of ctx.Informers.
func New(ctx controller.Context) *Controller {
	clk := ctx.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	namespaces := ctx.Informers.Core().V1().Namespaces()
	accounts := ctx.Informers.Core().V1().ServiceAccounts()
	c := &Controller{
		log:      ctx.Log.With("controller", Name),
		client:   ctx.Client,
		nsLister: namespaces.Lister(),
		saLister: accounts.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "serviceaccount", Clock: clk}),
		ensure: DefaultServiceAccounts,
	}
	c.synced = []cache.InformerSynced{accounts.Informer().HasSynced, namespaces.Informer().HasSynced}
	saReg, err := accounts.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: c.serviceAccountDeleted,
	})
	if err == nil {
		c.synced[0] = saReg.HasSynced
	}
	nsReg, err2 := namespaces.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.namespaceChanged,
		UpdateFunc: func(_, obj any) { c.namespaceChanged(obj) },
	})
	if err2 == nil {
		c.synced[1] = nsReg.HasSynced
	}
	if err := errors.Join(err, err2); err != nil {
		// Only a stopped informer refuses handlers.
		c.log.Error("cannot watch namespaces and service accounts", "err", err)
	}
	return c
}

// serviceAccountDeleted queues the namespace of a deleted service account,
// so a default one is created again.
func (c *Controller) serviceAccountDeleted(obj any) {
	sa, ok := controller.ObjectFrom[*corev1.ServiceAccount](obj)
	if !ok {
		c.log.Error("unexpected object in a service account delete event", "type", obj)
		return
	}
	c.queue.Add(sa.Namespace)
}

// namespaceChanged queues a namespace that was added or updated.
func (c *Controller) namespaceChanged(obj any) {
	if ns, ok := obj.(*corev1.Namespace); ok {
		c.queue.Add(ns.Name)
	}
}

// Start runs the workers until ctx ends. The caller starts the informer
// factory.
func (c *Controller) Start(ctx context.Context) error {
	c.log.Info("Starting controller")
	defer c.log.Info("Shutting down controller")
	return worker.Run(ctx, c.queue, worker.Errors(c.syncNamespace), worker.Options{Workers: Workers, Synced: c.synced, Log: c.log})
}

// syncNamespace creates the missing default service accounts of an active
// namespace.
func (c *Controller) syncNamespace(ctx context.Context, name string) error {
	ns, err := c.nsLister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns.Status.Phase != corev1.NamespaceActive {
		// Nothing is created in a namespace being deleted.
		return nil
	}
	var errs []error
	for _, saName := range c.ensure {
		_, err := c.saLister.ServiceAccounts(ns.Name).Get(saName)
		switch {
		case err == nil:
			continue
		case !apierrors.IsNotFound(err):
			return err
		}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: saName, Namespace: ns.Name}}
		_, err = c.client.CoreV1().ServiceAccounts(ns.Name).Create(ctx, sa, metav1.CreateOptions{})
		switch {
		case err == nil:
			c.log.Debug("created service account", "namespace", ns.Name, "name", saName)
		case apierrors.IsAlreadyExists(err):
		case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
			// The namespace started terminating meanwhile.
		default:
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
