package bench

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// watchDrain bounds the wait, after the writers stop, for the events still on
// their way to the watchers.
const watchDrain = 10 * time.Second

// runWatch opens one watch on nsWatch per watcher client, then lets the writer
// clients update their own configmap (w-<writer>, stamped with the time the
// write was sent) for dur. It reports the events delivered to all watchers
// per second (from the first write to the last event), and the latency from
// sending a write to a watcher receiving its event.
func runWatch(watchers, writers []*kubernetes.Clientset, dur time.Duration) result {
	var errs errorLog
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l, err := writers[0].CoreV1().ConfigMaps(nsWatch).List(ctx, metav1.ListOptions{})
	if err != nil {
		errs.add(fmt.Errorf("list before watch: %w", err))
		return result{errors: errs.n, errMsgs: errs.msgs}
	}
	var streams []watch.Interface
	for _, cs := range watchers {
		w, err := cs.CoreV1().ConfigMaps(nsWatch).Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
		if err != nil {
			errs.add(fmt.Errorf("open watch: %w", err))
			continue
		}
		streams = append(streams, w)
	}
	defer func() {
		for _, w := range streams {
			w.Stop()
		}
	}()

	var (
		delivered atomic.Int64
		stopping  atomic.Bool  // set before Stop: errors after it are ours
		lastEvent atomic.Int64 // unix nanos
		wg        sync.WaitGroup
		perWatch  = make([][]time.Duration, len(streams))
	)
	for i, w := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ev := range w.ResultChan() {
				now := time.Now()
				if ev.Type == watch.Error {
					if stopping.Load() {
						continue
					}
					errs.add(fmt.Errorf("watch error event: %v", ev.Object))
					continue
				}
				cm, ok := ev.Object.(*corev1.ConfigMap)
				if !ok || ev.Type != watch.Modified {
					continue
				}
				sent, err := strconv.ParseInt(cm.Data["sent"], 10, 64)
				if err != nil {
					continue
				}
				perWatch[i] = append(perWatch[i], now.Sub(time.Unix(0, sent)))
				delivered.Add(1)
				for old := lastEvent.Load(); old < now.UnixNano() && !lastEvent.CompareAndSwap(old, now.UnixNano()); old = lastEvent.Load() {
				}
			}
		}()
	}

	start := time.Now()
	upd := newUpdater(nsWatch, "w-", len(writers))
	upd.stamp = func(data map[string]string) { data["sent"] = strconv.FormatInt(time.Now().UnixNano(), 10) }
	writes := runPhase(writers, 1_000_000, dur, upd.op)
	errs.merge("write: ", writes)
	want := int64(writes.ops) * int64(len(streams))
	drainEnd := time.Now().Add(watchDrain)
	for delivered.Load() < want && time.Now().Before(drainEnd) {
		time.Sleep(10 * time.Millisecond)
	}
	stopping.Store(true)
	for _, w := range streams {
		w.Stop()
	}
	cancel()
	wg.Wait()

	r := result{errors: errs.n, errMsgs: errs.msgs}
	r.lat = slices.Concat(perWatch...)
	sort.Slice(r.lat, func(i, j int) bool { return r.lat[i] < r.lat[j] })
	r.ops = len(r.lat)
	if last := lastEvent.Load(); last > 0 {
		r.elapsed = time.Unix(0, last).Sub(start)
	}
	r.note = fmt.Sprintf("%d writes/s by %d writers; %d of %d events delivered",
		int(writes.rate()), len(writers), r.ops, want)
	return r
}
