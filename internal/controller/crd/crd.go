// Package crd keeps the status of CustomResourceDefinitions, as the
// controllers of upstream's apiextensions-apiserver do, in one controller
// with one queue keyed by CRD name:
//
//   - names.go: status.acceptedNames and the NamesAccepted condition (the
//     names of a CRD may not clash with the names other CRDs of its group
//     have been given);
//   - establish.go: the Established condition, True as soon as the names
//     are accepted (the apiserver serves a CRD's resource from then on);
//   - nonstructural.go: the NonStructuralSchema condition, present while a
//     version's schema is not structural;
//   - finalizer.go: a deleted CRD with the customresourcecleanup finalizer
//     has its custom resources deleted (through the API, with the metadata
//     client), then loses the finalizer, so the apiserver removes it.
//
// The decisions (status.go, names.go, establish.go, nonstructural.go) are
// pure; crd.go and finalizer.go do the I/O. One worker reconciles at a time,
// since accepting names is a reservation that must not race with itself.
package crd

import (
	"context"
	"log/slog"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	apiextensionslisters "k8s.io/apiextensions-apiserver/pkg/client/listers/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"orch/internal/controller"
	"orch/internal/worker"
)

// Name is the controller's name in logs and in internal/server's list.
const Name = "crd"

// resync is how often the CRD informer hands every CRD back (upstream's
// apiextensions-apiserver uses five minutes).
const resync = 5 * time.Minute

// mutationTTL is how long a status the controller wrote is preferred to
// an older one in the informer's cache (upstream's naming controller's).
const mutationTTL = 60 * time.Second

// Controller maintains the status of CustomResourceDefinitions.
type Controller struct {
	log      *slog.Logger
	client   apiextensionsclientset.Interface
	metadata metadata.Interface
	factory  apiextensionsinformers.SharedInformerFactory
	crds     apiextensionslisters.CustomResourceDefinitionLister
	// written holds the CRDs the controller wrote until the informer
	// catches up, so that a name accepted for one CRD is seen as taken
	// when the next CRD of the group is looked at.
	written cache.MutationCache
	synced  []cache.InformerSynced
	queue   workqueue.TypedRateLimitingInterface[string]
}

// New builds the controller: it writes CRD status with client, deletes
// custom resources with ctx.Metadata, and watches CRDs with an informer of
// its own on client, which Start starts.
func New(ctx controller.Context, client apiextensionsclientset.Interface) *Controller {
	ctx = ctx.WithDefaults()
	factory := apiextensionsinformers.NewSharedInformerFactory(client, resync)
	informer := factory.Apiextensions().V1().CustomResourceDefinitions()
	indexer := informer.Informer().GetIndexer()
	c := &Controller{
		log:      ctx.Log.With("controller", Name),
		client:   client,
		metadata: ctx.Metadata,
		factory:  factory,
		crds:     informer.Lister(),
		written:  cache.NewIntegerResourceVersionMutationCache(klog.Background(), indexer, indexer, mutationTTL, false),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: Name, Clock: ctx.Clock}),
	}
	reg, err := informer.Informer().AddEventHandler(controller.EnqueueHandlers(c.queue.Add))
	if err != nil {
		c.log.Error("cannot watch CustomResourceDefinitions", "err", err)
		c.synced = []cache.InformerSynced{informer.Informer().HasSynced}
		return c
	}
	c.synced = []cache.InformerSynced{reg.HasSynced}
	return c
}

// Start runs the CRD informer and the worker until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	c.log.Info("Starting controller")
	defer c.log.Info("Shutting down controller")
	c.factory.StartWithContext(ctx)
	defer c.factory.Shutdown()
	// One worker: names are reserved one CRD at a time.
	return worker.Run(ctx, c.queue, c.sync, worker.Options{Workers: 1, Synced: c.synced, Log: c.log})
}

// sync brings the status of CRD name up to date, or finalizes it when it
// is being deleted.
func (c *Controller) sync(ctx context.Context, name string) (worker.Result, error) {
	crd, err := c.get(name)
	if err != nil {
		return worker.Result{}, err
	}
	if crd == nil {
		// Deleted: its names are free for the other CRDs of its group.
		return worker.Result{}, c.enqueueGroup(name, groupOfName(name))
	}
	if crd.DeletionTimestamp != nil {
		return c.finalize(ctx, crd)
	}
	group, err := c.group(crd.Spec.Group)
	if err != nil {
		return worker.Result{}, err
	}
	want := desired(crd, group)
	if !statusDiffers(crd, want) {
		return worker.Result{}, nil
	}
	written, err := c.client.ApiextensionsV1().CustomResourceDefinitions().UpdateStatus(ctx, want, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return worker.Result{}, nil // deleted or changed meanwhile: its event brings it back
	}
	if err != nil {
		return worker.Result{}, err
	}
	c.written.Mutation(written)
	c.log.Info("status written", "crd", name, "namesAccepted", conditionStatus(written, apiextensionsv1.NamesAccepted),
		"established", conditionStatus(written, apiextensionsv1.Established))
	// Names it gave up may be what another CRD of the group waits for.
	return worker.Result{}, c.enqueueGroup(name, crd.Spec.Group)
}

// get returns CRD name, the newer of the informer's and the one last
// written; nil when it does not exist.
func (c *Controller) get(name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	obj, exists, err := c.written.GetByKey(name)
	if err != nil || !exists {
		return nil, err
	}
	crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return nil, nil
	}
	return crd, nil
}

// group returns every CRD of API group g, each the newer of the
// informer's and the one last written.
func (c *Controller) group(g string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	all, err := c.crds.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, crd := range all {
		if crd.Spec.Group != g {
			continue
		}
		if newer, err := c.get(crd.Name); err == nil && newer != nil {
			crd = newer
		}
		out = append(out, crd)
	}
	return out, nil
}

// enqueueGroup adds every CRD of API group g but name.
func (c *Controller) enqueueGroup(name, g string) error {
	all, err := c.crds.List(labels.Everything())
	if err != nil {
		return err
	}
	for _, crd := range all {
		if crd.Spec.Group == g && crd.Name != name {
			c.queue.Add(crd.Name)
		}
	}
	return nil
}

// groupOfName is the API group of the CRD named PLURAL.GROUP.
func groupOfName(name string) string {
	_, g, _ := strings.Cut(name, ".")
	return g
}
