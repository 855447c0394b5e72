package replicaset

import (
	"context"
	"log/slog"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"orch/internal/controller"
	"orch/internal/worker"
)

const (
	// name is the controller's name in logs.
	name = "replicaset"
	// workers is how many keys of each kind are synced at once, upstream's
	// --concurrent-replicaset-syncs default.
	workers = 5
	// burstReplicas caps how many pods one sync creates or deletes.
	burstReplicas = 500
	// statusUpdateRetries is how many times a conflicting status write is
	// retried after a fresh read.
	statusUpdateRetries = 1
)

// Controller runs the ReplicaSet loop and the ReplicationController loop.
type Controller struct {
	log      *slog.Logger
	managers []*manager
	synced   []cache.InformerSynced
	done     chan struct{}
}

// manager is one loop: ReplicaSets or ReplicationControllers.
type manager struct {
	kind       *kind
	client     kubernetes.Interface
	recorder   record.EventRecorder
	log        *slog.Logger
	clock      clock.PassiveClock
	podLister  corelisters.PodLister
	podIndexer cache.Indexer
	ownerIndex cache.Indexer
	queue      workqueue.TypedRateLimitingInterface[string]
	exp        *controller.Expectations
	delay      *controller.Delayer
}

// New builds the controller from ctx and registers its event handlers on
// the shared pod, ReplicaSet and ReplicationController informers; the
// caller starts the informer factory.
func New(ctx controller.Context) *Controller {
	ctx = ctx.WithDefaults()
	log := ctx.Log.With("controller", name)
	c := &Controller{log: log, done: make(chan struct{})}
	pods := ctx.Informers.Core().V1().Pods()
	podInformer := pods.Informer()
	if err := addIndex(podInformer, podOwnerIndex, indexPodByOwner); err != nil {
		log.Error("pods cannot be looked up by owner", "err", err)
	}
	rsInformer := ctx.Informers.Apps().V1().ReplicaSets().Informer()
	rcInformer := ctx.Informers.Core().V1().ReplicationControllers().Informer()
	for _, k := range []*kind{replicaSetKind(ctx.Client, rsInformer), replicationControllerKind(ctx.Client, rcInformer)} {
		if err := addIndex(k.informer, controllerUIDIndex, indexByControllerUID); err != nil {
			log.Error("related objects cannot be looked up", "kind", k.gvk.Kind, "err", err)
		}
		m := &manager{
			kind:       k,
			client:     ctx.Client,
			recorder:   ctx.Recorder(k.component),
			log:        log.With("kind", k.gvk.Kind),
			clock:      ctx.Clock,
			podLister:  pods.Lister(),
			podIndexer: podInformer.GetIndexer(),
			ownerIndex: k.informer.GetIndexer(),
			queue: workqueue.NewTypedRateLimitingQueueWithConfig(
				workqueue.DefaultTypedControllerRateLimiter[string](),
				workqueue.TypedRateLimitingQueueConfig[string]{Name: k.name},
			),
			exp: controller.NewExpectations(ctx.Clock),
		}
		m.delay = controller.NewDelayer(ctx.Clock, m.queue.Add, c.done)
		m.addHandlers(podInformer)
		c.managers = append(c.managers, m)
		c.synced = append(c.synced, k.informer.HasSynced)
	}
	c.synced = append(c.synced, podInformer.HasSynced)
	return c
}

// Start waits for the informer caches, then runs the workers of each kind
// (ReplicaSets, ReplicationControllers) until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	defer close(c.done)
	c.log.Info("starting controller")
	defer c.log.Info("shutting down controller")
	var wg sync.WaitGroup
	for _, m := range c.managers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker.Run(ctx, m.queue, worker.Errors(m.sync), worker.Options{Workers: workers, Synced: c.synced, Log: m.log})
		}()
	}
	wg.Wait()
	return nil
}

// get returns the object with key from the informer cache, as a ReplicaSet.
func (m *manager) get(key string) (*appsv1.ReplicaSet, bool) {
	obj, exists, err := m.kind.informer.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return nil, false
	}
	return m.kind.convert(obj)
}

// resolveControllerRef returns the object ref points to, if it is of this
// kind and still has the same UID.
func (m *manager) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *appsv1.ReplicaSet {
	if ref.Kind != m.kind.gvk.Kind {
		return nil
	}
	rs, ok := m.get(namespace + "/" + ref.Name)
	if !ok || rs.UID != ref.UID {
		return nil
	}
	return rs
}

// selecting returns the objects of this kind in the pod's namespace whose
// selector matches the pod's labels.
func (m *manager) selecting(pod *corev1.Pod) []*appsv1.ReplicaSet {
	if len(pod.Labels) == 0 {
		return nil
	}
	objs, err := m.kind.informer.GetIndexer().ByIndex(cache.NamespaceIndex, pod.Namespace)
	if err != nil {
		return nil
	}
	var out []*appsv1.ReplicaSet
	for _, obj := range objs {
		rs, ok := m.kind.convert(obj)
		if !ok {
			continue
		}
		if selectorOf(rs).Matches(labelSet(pod.Labels)) {
			out = append(out, rs)
		}
	}
	if len(out) > 1 {
		m.log.Info("more than one object selects the pod; only its controller manages it", "pod", controller.Key(pod), "count", len(out))
	}
	return out
}

func (m *manager) enqueue(rs *appsv1.ReplicaSet) {
	m.queue.Add(controller.Key(rs))
}
