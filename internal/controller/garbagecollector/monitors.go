package garbagecollector

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// ignoredResources are never watched nor collected, as upstream's defaults
// (--gc-ignored-resources): events come and go too fast to be worth a graph.
var ignoredResources = map[schema.GroupResource]struct{}{
	{Group: "", Resource: "events"}:              {},
	{Group: "events.k8s.io", Resource: "events"}: {},
}

// monitor watches one resource and feeds the graph: through the
// controllers' shared informer when their typed factory serves the resource
// (one watch and one cache for both, as upstream's collector), else with a
// metadata informer of its own.
type monitor struct {
	kind         schema.GroupVersionKind
	informer     cache.SharedIndexInformer
	registration cache.ResourceEventHandlerRegistration
	shared       bool // the informer is the factory's, which runs it
	running      bool
	// cancel stops an informer of the collector's own once it runs.
	cancel context.CancelFunc
}

// stop takes the monitor off its resource: a shared informer runs on for
// the controllers without the collector's handler.
func (m *monitor) stop() {
	if m.shared {
		_ = m.informer.RemoveEventHandler(m.registration)
		return
	}
	if m.cancel != nil {
		m.cancel()
	}
}

// deletableResources returns the preferred version of every resource that
// supports delete, list and watch, as upstream's GetDeletableResources. A
// partial discovery failure returns what was found along with the error.
func deletableResources(d discovery.DiscoveryInterface) (map[schema.GroupVersionResource]struct{}, error) {
	lists, err := discovery.ServerPreferredResources(d)
	if lists == nil && err != nil {
		return nil, fmt.Errorf("garbage collector: discovery found no resources: %w", err)
	}
	deletable := discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"delete", "list", "watch"}}, lists)
	gvrs, parseErr := discovery.GroupVersionResources(deletable)
	if parseErr != nil {
		err = errors.Join(err, parseErr)
	}
	return gvrs, err
}

// syncMonitors makes the monitors match resources: one for each resource
// (except the ignored ones), started if the builder runs; the monitors of
// resources no longer served stop. Resources whose kind cannot be mapped are
// left out and reported in the error, so the next sync tries again.
func (gb *graphBuilder) syncMonitors(resources map[schema.GroupVersionResource]struct{}) error {
	gb.monitorLock.Lock()
	defer gb.monitorLock.Unlock()
	var errs []error
	kept := map[schema.GroupVersionResource]*monitor{}
	for gvr := range resources {
		if _, ignored := ignoredResources[gvr.GroupResource()]; ignored {
			continue
		}
		if m, ok := gb.monitors[gvr]; ok {
			kept[gvr] = m
			continue
		}
		kind, err := gb.mapper.KindFor(gvr)
		if err != nil {
			errs = append(errs, fmt.Errorf("cannot find the kind of %s: %w", gvr, err))
			continue
		}
		m, err := gb.newMonitor(gvr, kind)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		kept[gvr] = m
	}
	for gvr, m := range gb.monitors {
		if _, ok := kept[gvr]; !ok {
			m.stop()
		}
	}
	gb.monitors = kept
	gb.startMonitorsLocked()
	return errors.Join(errs...)
}

func (gb *graphBuilder) newMonitor(gvr schema.GroupVersionResource, kind schema.GroupVersionKind) (*monitor, error) {
	var informer cache.SharedIndexInformer
	shared := false
	if gb.shared != nil {
		if gi, err := gb.shared.ForResource(gvr); err == nil {
			informer, shared = gi.Informer(), true
		}
	}
	if informer == nil {
		informer = metadatainformer.NewFilteredMetadataInformer(gb.metadata, gvr, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	}
	reg, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			gb.graphChanges.Add(&event{eventType: addEvent, obj: obj, gvk: kind})
		},
		UpdateFunc: func(oldObj, newObj any) {
			gb.graphChanges.Add(&event{eventType: updateEvent, obj: newObj, oldObj: oldObj, gvk: kind})
		},
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			gb.graphChanges.Add(&event{eventType: deleteEvent, obj: obj, gvk: kind})
		},
	})
	if err != nil {
		return nil, fmt.Errorf("cannot watch %s: %w", gvr, err)
	}
	return &monitor{kind: kind, informer: informer, registration: reg, shared: shared}, nil
}

// startMonitorsLocked runs the monitors that do not run yet, once the
// builder itself runs; the factory starts the shared informers it has not
// started yet.
func (gb *graphBuilder) startMonitorsLocked() {
	if gb.ctx == nil {
		return
	}
	started, shared := 0, false
	for _, m := range gb.monitors {
		if m.running {
			continue
		}
		m.running = true
		started++
		if m.shared {
			shared = true
			continue
		}
		ctx, cancel := context.WithCancel(gb.ctx)
		m.cancel = cancel
		go m.informer.RunWithContext(ctx)
	}
	if shared {
		gb.shared.StartWithContext(gb.ctx)
	}
	if started > 0 {
		gb.log.Debug("started resource monitors", "started", started, "total", len(gb.monitors))
	}
}

// isSynced is true once every monitor has listed its resource and handed
// the objects to the graph.
func (gb *graphBuilder) isSynced() bool {
	gb.monitorLock.RLock()
	defer gb.monitorLock.RUnlock()
	if len(gb.monitors) == 0 {
		return false
	}
	for _, m := range gb.monitors {
		if !m.registration.HasSynced() {
			return false
		}
	}
	return true
}

// stopMonitors stops every monitor.
func (gb *graphBuilder) stopMonitors() {
	gb.monitorLock.Lock()
	defer gb.monitorLock.Unlock()
	for _, m := range gb.monitors {
		m.stop()
	}
	gb.monitors = map[schema.GroupVersionResource]*monitor{}
}
