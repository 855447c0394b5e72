// Package controllertest builds a controller.Context against a real
// apiserver on real embedded etcd (apitest) for controller tests, and holds
// the helpers those tests share: Eventually for waiting on the controller,
// Events for reading what it reported.
package controllertest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"orch/internal/apiserver/apitest"
	"orch/internal/controller"
)

// Env is a running apiserver and a Context for controllers on it.
type Env struct {
	Server  *apitest.Server
	Context controller.Context
}

// New starts an apiserver, creates the given namespaces, and returns a
// Context whose events are really written. Call Start after building the
// controllers (they register informers first).
func New(t *testing.T, namespaces ...string) *Env {
	t.Helper()
	srv := apitest.Start(t)
	client := kubernetes.NewForConfigOrDie(srv.Config)
	for _, ns := range namespaces {
		if _, err := client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	t.Cleanup(broadcaster.Shutdown)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("ORCH_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return &Env{Server: srv, Context: controller.Context{
		Client: client, Metadata: metadata.NewForConfigOrDie(srv.Config),
		Informers: informers.NewSharedInformerFactory(client, 0),
		Recorder: func(component string) record.EventRecorder {
			return broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
		},
		Log: log, Clock: clock.RealClock{},
	}}
}

// Start starts the informers and runs each component until the test ends.
func (e *Env) Start(t *testing.T, components ...interface{ Start(context.Context) error }) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, len(components))
	e.Context.Informers.Start(ctx.Done())
	for _, c := range components {
		go func() { c.Start(ctx); done <- struct{}{} }()
	}
	t.Cleanup(func() {
		cancel()
		for range components {
			<-done
		}
		e.Context.Informers.Shutdown()
	})
	return ctx
}
