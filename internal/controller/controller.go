// Package controller holds what the controllers in internal/controller/<name>
// share: the Context they are built from, the pieces
// their informer handlers have in common (Key, ObjectFrom, EnqueueHandlers,
// ResolveControllerRef), Lookup of the object a key names, pod
// create/delete Expectations, the Delayer, and
// pod helpers (PodReady, PodAvailable). Each controller is its own package
// in the sample-controller shape: informers feed a rate-limited workqueue,
// internal/worker's loop reconciles one key at a time (read the current
// state, compute the difference, act idempotently, requeue with backoff on
// error), and
// Start(ctx) blocks until ctx ends. Controllers speak to the apiserver only
// through client-go.
package controller

import (
	"log/slog"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// Context is what a controller is built from.
type Context struct {
	// Client talks to the apiserver.
	Client kubernetes.Interface
	// Metadata is a metadata-only client (garbage collector, namespace deletion).
	Metadata metadata.Interface
	// Config is the configuration Client was built from, for the clients of
	// other API groups (the CRD controller's apiextensions client).
	Config *rest.Config
	// Informers is shared by every controller; the caller starts it after the
	// controllers have asked for their informers.
	Informers informers.SharedInformerFactory
	// Recorder returns an event recorder that reports as component
	// (e.g. "deployment-controller"), writing core/v1 Events like upstream.
	Recorder func(component string) record.EventRecorder
	// Log is the controller manager's logger; controllers scope it with
	// "controller", NAME.
	Log *slog.Logger
	// Clock is injected so tests can move time.
	Clock clock.WithTicker
}

// WithDefaults returns c with what a test may leave out filled in: the real
// clock, slog's default logger, and a recorder that drops events.
func (c Context) WithDefaults() Context {
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	if c.Recorder == nil {
		c.Recorder = func(string) record.EventRecorder { return &record.FakeRecorder{} }
	}
	return c
}

// Key is obj's workqueue key, as cache.MetaNamespaceKeyFunc makes it:
// "namespace/name", or "name" for a cluster-scoped object.
func Key(obj metav1.Object) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}
