package bench

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// watchDrain bounds the wait, after the writers stop, for the events still on
// their way to the watchers.
const watchDrain = 10 * time.Second

// runWatch opens one watch on the objects of res in nsWatch per watcher
// client, then lets the writer clients update their own object (w-<writer>,
// stamped with the time the write was sent) for dur. It reports the events
// delivered to all watchers per second (from the first write to the last
// event), and the latency from sending a write to a watcher receiving its
// event.
func runWatch(res resource, watchers, writers []*client, dur time.Duration) result {
	var errs errorLog
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l, err := res.list(ctx, writers[0], nsWatch, metav1.ListOptions{})
	if err != nil {
		errs.add(fmt.Errorf("list before watch: %w", err))
		return result{errors: errs.n, errMsgs: errs.msgs}
	}
	var streams []watch.Interface
	for _, c := range watchers {
		w, err := res.watch(ctx, c, nsWatch, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
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
				if ev.Type != watch.Modified {
					continue
				}
				sent, ok := res.sent(ev.Object)
				if !ok {
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
	upd := newUpdater(res, nsWatch, "w-", len(writers))
	upd.stamp = true
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
