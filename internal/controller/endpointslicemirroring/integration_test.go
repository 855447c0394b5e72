package endpointslicemirroring_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"orch/internal/controller/controllertest"
	"orch/internal/controller/endpointslicemirroring"
	"orch/internal/envtest"
)

// sliceWaiter waits on the shared EndpointSlice informer: it looks at the
// slices of a service each time the informer shows a change.
type sliceWaiter struct {
	t       *testing.T
	env     *controllertest.Env
	changed chan struct{}
}

// newSliceWaiter registers its handler; call it before env.Start.
func newSliceWaiter(t *testing.T, env *controllertest.Env) *sliceWaiter {
	w := &sliceWaiter{t: t, env: env, changed: make(chan struct{}, 1)}
	signal := func(any) {
		select {
		case w.changed <- struct{}{}:
		default:
		}
	}
	env.Informers.Discovery().V1().EndpointSlices().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: signal, UpdateFunc: func(_, obj any) { signal(obj) }, DeleteFunc: signal,
	})
	return w
}

// wait returns the slices of service svc once cond holds for them.
func (w *sliceWaiter) wait(svc, what string, cond func([]*discoveryv1.EndpointSlice) bool) []*discoveryv1.EndpointSlice {
	w.t.Helper()
	lister := w.env.Informers.Discovery().V1().EndpointSlices().Lister()
	timeout := time.After(envtest.EventuallyTimeout)
	for {
		slices, err := lister.EndpointSlices("mirror").List(labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: svc}))
		if err != nil {
			w.t.Fatal(err)
		}
		if cond(slices) {
			return slices
		}
		select {
		case <-w.changed:
		case <-timeout:
			w.t.Fatalf("timed out waiting for %s; slices: %+v", what, slices)
		}
	}
}

// oneSliceWith is true for exactly one slice with one endpoint at ip.
func oneSliceWith(ip string) func([]*discoveryv1.EndpointSlice) bool {
	return func(s []*discoveryv1.EndpointSlice) bool {
		return len(s) == 1 && len(s[0].Endpoints) == 1 && s[0].Endpoints[0].Addresses[0] == ip
	}
}

func none(s []*discoveryv1.EndpointSlice) bool { return len(s) == 0 }

// The conformance test's steps (create, update, delete a custom Endpoints
// of a selector-less Service), and a mirrored slice deleted by someone
// else coming back, and the slices going with their Service.
func TestMirrorsCustomEndpoints(t *testing.T) {
	env := controllertest.New(t, "mirror")
	waiter := newSliceWaiter(t, env)
	env.Start(t, endpointslicemirroring.New(env.Context))
	client := env.Context.Client
	ctx := t.Context()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "custom", Namespace: "mirror"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "example", Port: 80, Protocol: corev1.ProtocolTCP}}}}
	if _, err := client.CoreV1().Services("mirror").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "custom", Namespace: "mirror",
		Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": "n", corev1.EndpointsLastChangeTriggerTime: "t"}},
		Subsets: []corev1.EndpointSubset{{Ports: []corev1.EndpointPort{{Port: 80}},
			Addresses: []corev1.EndpointAddress{{IP: "10.1.2.3"}}, NotReadyAddresses: []corev1.EndpointAddress{{IP: "10.1.2.4"}}}}}
	created, err := client.CoreV1().Endpoints("mirror").Create(ctx, ep, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := waiter.wait("custom", "the mirrored slice", func(s []*discoveryv1.EndpointSlice) bool {
		return len(s) == 1 && len(s[0].Endpoints) == 2
	})[0]
	if s.Labels["team"] != "a" || s.Labels[discoveryv1.LabelManagedBy] != "endpointslicemirroring-controller.k8s.io" ||
		s.Annotations["note"] != "n" || s.Annotations[corev1.EndpointsLastChangeTriggerTime] != "" {
		t.Errorf("slice labels %v annotations %v", s.Labels, s.Annotations)
	}
	if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].Kind != "Endpoints" || s.OwnerReferences[0].UID != created.UID {
		t.Errorf("slice owners %+v, want the Endpoints", s.OwnerReferences)
	}
	if len(s.Ports) != 1 || *s.Ports[0].Port != 80 || *s.Ports[0].Protocol != corev1.ProtocolTCP || s.AddressType != discoveryv1.AddressTypeIPv4 {
		t.Errorf("slice ports %+v address type %s", s.Ports, s.AddressType)
	}
	for _, e := range s.Endpoints {
		if want := e.Addresses[0] == "10.1.2.3"; *e.Conditions.Ready != want {
			t.Errorf("endpoint %s ready=%v, want %v", e.Addresses[0], *e.Conditions.Ready, want)
		}
	}

	created.Subsets = []corev1.EndpointSubset{{Ports: []corev1.EndpointPort{{Port: 80}}, Addresses: []corev1.EndpointAddress{{IP: "10.2.3.4"}}}}
	if _, err := client.CoreV1().Endpoints("mirror").Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := waiter.wait("custom", "the update mirrored", oneSliceWith("10.2.3.4"))[0]; got.Name != s.Name {
		t.Errorf("slice %s replaced by %s, want it updated in place", s.Name, got.Name)
	}

	if err := client.DiscoveryV1().EndpointSlices("mirror").Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waiter.wait("custom", "a new slice in place of the deleted one", func(slices []*discoveryv1.EndpointSlice) bool {
		return oneSliceWith("10.2.3.4")(slices) && slices[0].Name != s.Name
	})

	if err := client.CoreV1().Endpoints("mirror").Delete(ctx, "custom", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waiter.wait("custom", "the slices to go with the Endpoints", none)

	// Mirrored again, then the Service goes.
	ep.ResourceVersion = ""
	if _, err := client.CoreV1().Endpoints("mirror").Create(ctx, ep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waiter.wait("custom", "the Endpoints mirrored again", func(s []*discoveryv1.EndpointSlice) bool { return len(s) == 1 })
	if err := client.CoreV1().Services("mirror").Delete(ctx, "custom", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waiter.wait("custom", "the slices to go with the Service", none)
}
