// Package controllertest gives controller tests a controller.Context on
// envtest's environment (a real apiserver on real embedded etcd), and the
// waits the storage controllers' tests share (WaitClaim, WaitVolume,
// WaitEvent).
package controllertest

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

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

// WaitClaim waits until claim ns/name exists and ok says yes, and returns it.
func WaitClaim(t testing.TB, client kubernetes.Interface, ns, name string, ok func(*corev1.PersistentVolumeClaim) bool) *corev1.PersistentVolumeClaim {
	t.Helper()
	var claim *corev1.PersistentVolumeClaim
	envtest.EventuallyTrue(t, "claim "+ns+"/"+name, func() bool {
		var err error
		claim, err = client.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), name, metav1.GetOptions{})
		return err == nil && ok(claim)
	})
	return claim
}

// WaitVolume waits until PersistentVolume name exists and ok says yes, and
// returns it.
func WaitVolume(t testing.TB, client kubernetes.Interface, name string, ok func(*corev1.PersistentVolume) bool) *corev1.PersistentVolume {
	t.Helper()
	var pv *corev1.PersistentVolume
	envtest.EventuallyTrue(t, "volume "+name, func() bool {
		var err error
		pv, err = client.CoreV1().PersistentVolumes().Get(context.Background(), name, metav1.GetOptions{})
		return err == nil && ok(pv)
	})
	return pv
}

// WaitEvent waits for an event of component about the object name of
// namespace ns, with reason and message.
func WaitEvent(t testing.TB, client kubernetes.Interface, ns, name, component, reason, message string) {
	t.Helper()
	envtest.EventuallyTrue(t, "event "+reason+" on "+name, func() bool {
		list, err := client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String()})
		if err != nil {
			return false
		}
		for _, e := range list.Items {
			if e.Reason == reason && e.Message == message && e.Source.Component == component {
				return true
			}
		}
		return false
	})
}
