package resourcequota

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"orch/internal/quota"
)

// counters count the objects of the resources quotas name as
// count/<resource>.<group> beyond those quota.Usage counts itself
// (replicasets.apps, jobs.batch, custom resources …), as upstream's
// generic object count evaluator: a metadata informer per resource,
// started the first time a quota names it, whose deletions requeue their
// namespace (admission charges the creates).
type counters struct {
	client  metadata.Interface
	mapper  meta.RESTMapper
	enqueue func(obj any)

	mu       sync.Mutex
	ctx      context.Context // the controller's, set by start
	informer map[corev1.ResourceName]cache.SharedIndexInformer
}

func (c *counters) start(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ctx = ctx
}

// counts are the numbers of objects in namespace of every count/ resource
// of hard that quota.Usage does not count itself. ready is false while an
// informer has not listed yet (the namespace is synced again later); a
// resource the API does not serve is left out, as upstream leaves it
// out of status.used.
func (c *counters) counts(hard corev1.ResourceList, namespace string) (counts map[corev1.ResourceName]int, ready bool, err error) {
	counts, ready = map[corev1.ResourceName]int{}, true
	for name := range hard {
		if !strings.HasPrefix(string(name), "count/") || quota.CountedHere(name) {
			continue
		}
		inf, err := c.informerFor(name)
		if err != nil {
			return nil, false, err
		}
		if inf == nil {
			continue
		}
		if !inf.HasSynced() {
			ready = false
			continue
		}
		objs, err := inf.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
		if err != nil {
			return nil, false, err
		}
		counts[name] = len(objs)
	}
	return counts, ready, nil
}

// informerFor is the running informer of the resource count/<resource>.<group>
// names, nil when the API does not serve it.
func (c *counters) informerFor(name corev1.ResourceName) (cache.SharedIndexInformer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if inf, ok := c.informer[name]; ok {
		return inf, nil
	}
	if c.ctx == nil {
		return nil, fmt.Errorf("the resource quota controller has not started")
	}
	gr := schema.ParseGroupResource(strings.TrimPrefix(string(name), "count/"))
	gvr, err := c.mapper.ResourceFor(gr.WithVersion(""))
	if meta.IsNoMatchError(err) {
		if reset, ok := c.mapper.(meta.ResettableRESTMapper); ok {
			reset.Reset() // a CRD made later is found then
		}
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", name, err)
	}
	inf := metadatainformer.NewFilteredMetadataInformer(c.client, gvr, corev1.NamespaceAll, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, nil).Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: c.enqueue}); err != nil {
		return nil, err
	}
	go inf.Run(c.ctx.Done())
	if c.informer == nil {
		c.informer = map[corev1.ResourceName]cache.SharedIndexInformer{}
	}
	c.informer[name] = inf
	return inf, nil
}
