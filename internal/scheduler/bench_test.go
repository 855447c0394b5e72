package scheduler_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"orch/internal/envtest"
	"orch/internal/scheduler"
	st "orch/internal/scheduler/schedtest"
)

// BenchmarkSchedulerThroughAPI registers 1,000 nodes with a real apiserver
// on embedded etcd, then creates 10,000 pods (16 clients at once) and
// measures pods/s from the first create until the scheduler has bound the
// last one (events written, as in a cluster).
func BenchmarkSchedulerThroughAPI(b *testing.B) {
	const numNodes, numPods, clients = 1000, 10000, 16
	var rate float64
	for range b.N {
		b.StopTimer()
		srv := envtest.Start(b)
		client := kubernetes.NewForConfigOrDie(srv.Config)
		ctx, cancel := context.WithCancel(context.Background())
		if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		parallel(b, numNodes, clients, func(i int) error {
			n := st.Node(fmt.Sprintf("node-%04d", i)).CPU("32").Memory("128Gi").Label(v1.LabelTopologyZone, fmt.Sprintf("zone-%d", i%3)).Obj()
			created, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
			if err == nil {
				created.Status = n.Status
				_, err = client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
			}
			return err
		})
		broadcaster := record.NewBroadcaster()
		broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
		factory := informers.NewSharedInformerFactory(client, 0)
		s := scheduler.New(scheduler.Config{Client: client, Informers: factory, Clock: clock.RealClock{},
			Log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
			Recorder: broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: scheduler.Name})})
		var bound atomic.Int64
		done := make(chan struct{})
		factory.Core().V1().Pods().Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			UpdateFunc: func(old, obj any) {
				if old.(*v1.Pod).Spec.NodeName == "" && obj.(*v1.Pod).Spec.NodeName != "" && bound.Add(1) == numPods {
					close(done)
				}
			},
		})
		factory.StartWithContext(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { s.Start(ctx) })
		factory.WaitForCacheSync(ctx.Done())

		b.StartTimer()
		start := time.Now()
		parallel(b, numPods, clients, func(i int) error {
			p := st.Pod(fmt.Sprintf("pod-%05d", i)).Label("app", "web").Req("cpu", "100m", "memory", "128Mi").Obj()
			p.UID = ""
			_, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
			return err
		})
		<-done
		rate = numPods / time.Since(start).Seconds()
		b.StopTimer()
		cancel()
		wg.Wait()
		factory.Shutdown()
		broadcaster.Shutdown()
	}
	b.ReportMetric(rate, "pods/s")
}

// parallel runs f(0..n-1) on k goroutines.
func parallel(b *testing.B, n, k int, f func(i int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range k {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				if err := f(i); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
