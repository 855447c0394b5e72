package endpointslicemirroring

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// Which Endpoints are mirrored: only those whose Service exists without a
// selector and that do not ask to be skipped.
func TestWanted(t *testing.T) {
	endpoints := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	services := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	service := func(name string, selector map[string]string) {
		_ = services.Add(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: corev1.ServiceSpec{Selector: selector}})
	}
	endpointsOf := func(name string, labels map[string]string) {
		_ = endpoints.Add(&corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: labels}})
	}
	service("custom", nil)
	endpointsOf("custom", nil)
	service("selected", map[string]string{"app": "web"})
	endpointsOf("selected", nil)
	service("skipped", nil)
	endpointsOf("skipped", map[string]string{discoveryv1.LabelSkipMirror: "true"})
	endpointsOf("no-service", nil)
	service("no-endpoints", nil)
	c := &Controller{endpoints: corelisters.NewEndpointsLister(endpoints), services: corelisters.NewServiceLister(services)}
	for name, want := range map[string]bool{"custom": true, "selected": false, "skipped": false, "no-service": false, "no-endpoints": false} {
		ep, err := c.wanted("ns", name)
		if err != nil {
			t.Fatal(err)
		}
		if got := ep != nil; got != want {
			t.Errorf("%s: mirrored = %v, want %v", name, got, want)
		}
	}
}
