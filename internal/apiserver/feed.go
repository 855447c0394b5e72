package apiserver

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"orch/internal/storage"
)

// sink takes the objects of a resource as they change; the authorizers
// are sinks.
type sink interface {
	Update(obj any)
	Delete(obj any)
}

// authorizerFeeds are the resources the authorizers follow.
func (s *Server) authorizerFeeds() map[schema.GroupVersionResource]sink {
	rbacGV, core := rbacv1.SchemeGroupVersion, corev1.SchemeGroupVersion
	return map[schema.GroupVersionResource]sink{
		rbacGV.WithResource("roles"):                                   s.authz.rbac,
		rbacGV.WithResource("clusterroles"):                            s.authz.rbac,
		rbacGV.WithResource("rolebindings"):                            s.authz.rbac,
		rbacGV.WithResource("clusterrolebindings"):                     s.authz.rbac,
		core.WithResource("pods"):                                      s.authz.node,
		core.WithResource("persistentvolumes"):                         s.authz.node,
		core.WithResource("persistentvolumeclaims"):                    s.authz.node,
		storagev1.SchemeGroupVersion.WithResource("volumeattachments"): s.authz.node,
	}
}

// feed keeps to up to date with the watch cache of rs until ctx ends. When
// the watch ends it starts again from the cache's current state, and tells
// to of what was deleted meanwhile. synced is closed once the first state
// has been given.
func feed(ctx context.Context, rs *resourceStore, to sink, synced chan<- struct{}) {
	known := map[string]any{}
	first := true
	for ctx.Err() == nil {
		events, err := rs.cache.Watch(ctx, storage.WatchOptions{Initial: true, InitialBookmark: true})
		if err != nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
				continue
			}
		}
		seen, listing := map[string]bool{}, true
		for ev := range events {
			switch {
			case ev.Err != nil:
			case ev.Type == storage.Bookmark:
				if listing {
					for key, obj := range known {
						if !seen[key] {
							delete(known, key)
							to.Delete(obj)
						}
					}
					listing = false
					if first {
						first = false
						close(synced)
					}
				}
			case ev.Type == storage.Deleted:
				delete(known, ev.Key)
				to.Delete(ev.Value)
			default:
				if listing {
					seen[ev.Key] = true
				}
				known[ev.Key] = ev.Value
				to.Update(ev.Value)
			}
		}
	}
}
