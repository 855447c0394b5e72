// Package controllertest gives controller tests a controller.Context on
// envtest's environment (a real apiserver on real embedded etcd).
package controllertest

import (
	"testing"

	"orch/internal/controller"
	"orch/internal/envtest"
)

// Env is envtest's environment and a controller Context on it.
type Env struct {
	*envtest.Env
	Context controller.Context
}

// New starts an apiserver and creates the given namespaces (envtest.New),
// and returns a Context whose events are really written. Call Start after
// building the controllers (they register informers first).
func New(t testing.TB, namespaces ...string) *Env {
	t.Helper()
	e := envtest.New(t, namespaces...)
	return &Env{Env: e, Context: controller.Context{
		Client: e.Client, Metadata: e.Metadata, Config: e.Server.Config, Informers: e.Informers,
		Recorder: e.Recorder, Log: e.Log, Clock: e.Clock,
	}}
}
