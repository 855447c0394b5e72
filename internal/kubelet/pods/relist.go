package pods

import (
	"context"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"orch/internal/kubelet/podconfig"
)

// runtimePod is what one relist saw of a pod in the runtime.
type runtimePod struct {
	key string // namespace/name
	// fingerprint lists the pod's sandboxes and containers with their
	// states; a pod whose fingerprint changed between relists is synced.
	fingerprint string
}

// relist compares the runtime's sandboxes and containers with what the
// previous relist saw (two CRI calls, as upstream's PLEG) and queues the
// pods that changed or vanished; every resync ticks it queues every pod
// of the node and every pod the runtime has a sandbox of.
func (w *Workers) relist(ctx context.Context) {
	seen, err := w.listRuntimePods(ctx)
	if err != nil {
		w.log.Warn("relist the runtime's pods", "err", err)
		return
	}
	w.relists++
	full := w.prevRelist == nil || w.relists%w.resyncEvery() == 0
	for uid, p := range seen {
		if prev, ok := w.prevRelist[uid]; full || !ok || prev.fingerprint != p.fingerprint {
			w.queue.Add(p.key)
		}
	}
	for uid, p := range w.prevRelist {
		if _, ok := seen[uid]; !ok {
			w.queue.Add(p.key)
		}
	}
	w.prevRelist = seen
	if !full {
		return
	}
	// Pod directories are listed before the pods: a directory a sync
	// makes meanwhile belongs to a pod the list then has.
	onDisk, err := w.volumes.PodsOnDisk()
	if err != nil {
		w.log.Warn("list pod directories", "err", err)
	}
	pods, err := w.lister.List(everything)
	if err != nil {
		w.log.Error("list pods", "err", err)
		return
	}
	known := map[types.UID]bool{}
	for _, p := range pods {
		w.queue.Add(p.Namespace + "/" + p.Name)
		known[p.UID] = true
	}
	if w.static != nil {
		static := w.static.List()
		for _, p := range static {
			w.queue.Add(p.Namespace + "/" + p.Name)
			known[p.UID] = true
		}
		if err := w.mirrors.DeleteOrphans(ctx, static, pods); err != nil {
			w.log.Warn("delete the mirror pods of static pods that are gone", "err", err)
		}
	}
	w.removeOrphanedPodDirs(onDisk, known)
}

// removeOrphanedPodDirs tears down the directories (volumes) of the pods
// in onDisk that neither the API (known) nor the runtime has any more: an
// agent stopped before it could clean them up.
func (w *Workers) removeOrphanedPodDirs(onDisk []types.UID, known map[types.UID]bool) {
	for _, uid := range onDisk {
		if _, running := w.prevRelist[string(uid)]; known[uid] || running {
			continue
		}
		if err := w.volumes.TearDown(uid); err != nil {
			w.log.Warn("remove the directory of a pod that is gone", "uid", uid, "err", err)
		}
	}
}

// resyncEvery is how many relists go between full resyncs (10 s at the
// default relist period).
func (w *Workers) resyncEvery() int {
	return max(1, int(w.Resync/w.Relist))
}

// listRuntimePods is the runtime's pods by pod UID.
func (w *Workers) listRuntimePods(ctx context.Context) (map[string]runtimePod, error) {
	sandboxes, err := w.reader.ListPodSandbox(ctx, nil)
	if err != nil {
		return nil, err
	}
	containers, err := w.reader.ListContainers(ctx, nil)
	if err != nil {
		return nil, err
	}
	parts := map[string][]string{}
	keys := map[string]string{}
	for _, sb := range sandboxes {
		uid := sb.Labels[podconfig.LabelPodUID]
		ns, name := sb.Labels[podconfig.LabelPodNamespace], sb.Labels[podconfig.LabelPodName]
		if uid == "" || ns == "" || name == "" {
			continue // not a pod of a kubelet
		}
		keys[uid] = ns + "/" + name
		parts[uid] = append(parts[uid], "s:"+sb.Id+":"+sb.State.String())
	}
	for _, c := range containers {
		uid := c.Labels[podconfig.LabelPodUID]
		if _, ok := keys[uid]; ok {
			parts[uid] = append(parts[uid], "c:"+c.Id+":"+c.State.String())
		}
	}
	out := make(map[string]runtimePod, len(keys))
	for uid, key := range keys {
		slices.Sort(parts[uid])
		out[uid] = runtimePod{key: key, fingerprint: strings.Join(parts[uid], ",")}
	}
	return out, nil
}
