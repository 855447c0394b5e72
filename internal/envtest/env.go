package envtest

import (
	"context"
	"errors"
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
)

// Env is a running apiserver with what components under test take: a
// client, shared informers, an event recorder, a logger and a clock.
type Env struct {
	Server    *Server
	Client    kubernetes.Interface
	Metadata  metadata.Interface
	Informers informers.SharedInformerFactory
	// Recorder returns a recorder that writes Events as component.
	Recorder func(component string) record.EventRecorder
	Log      *slog.Logger
	Clock    clock.WithTicker
}

// New starts an apiserver and creates the given namespaces. Call Start after
// building the components (they register informers first).
func New(t testing.TB, namespaces ...string) *Env {
	t.Helper()
	srv := Start(t)
	client := kubernetes.NewForConfigOrDie(srv.Config)
	for _, ns := range namespaces {
		if _, err := client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	t.Cleanup(broadcaster.Shutdown)
	return &Env{
		Server: srv, Client: client, Metadata: metadata.NewForConfigOrDie(srv.Config),
		Informers: informers.NewSharedInformerFactory(client, 0),
		Recorder: func(component string) record.EventRecorder {
			return broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
		},
		Log: Logger(), Clock: clock.RealClock{},
	}
}

// Logger discards what it is told unless ORCH_TEST_LOG is set; then it
// writes everything, debug included, to stderr.
func Logger() *slog.Logger {
	if os.Getenv("ORCH_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// Start starts the informers and runs each component until the test ends;
// a component that returns an error fails the test.
func (e *Env) Start(t testing.TB, components ...interface{ Start(context.Context) error }) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, len(components))
	e.Informers.StartWithContext(ctx)
	for _, c := range components {
		go func() { done <- c.Start(ctx) }()
	}
	t.Cleanup(func() {
		cancel()
		for range components {
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("Start: %v", err)
			}
		}
		e.Informers.Shutdown()
	})
	return ctx
}
