package apiserver_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"orch/internal/envtest"
)

// TestServiceProxyErrors checks how services/proxy picks endpoints without
// sending traffic anywhere (test traffic stays on loopback, which
// EndpointSlices may not name): not-ready endpoints and endpoints whose pod
// lacks the address are skipped, unknown ports and services are errors.
func TestServiceProxyErrors(t *testing.T) {
	api := envtest.Start(t)
	client := kubernetes.NewForConfigOrDie(api.Config)
	ctx := context.Background()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}))
	pod, err := client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}}}, metav1.CreateOptions{})
	must(pod, err)
	pod.Status.PodIP, pod.Status.PodIPs = "10.42.0.8", []corev1.PodIP{{IP: "10.42.0.8"}}
	must(client.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}))
	must(client.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}, metav1.CreateOptions{}))
	must(client.DiscoveryV1().EndpointSlices("default").Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-abc", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(8080))}},
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.42.0.8"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)},
				TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-1"}},
			{Addresses: []string{"10.42.0.7"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
				TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-1"}},
		},
	}, metav1.CreateOptions{}))

	for path, want := range map[string]string{
		"/api/v1/namespaces/default/services/web:80/proxy/":   `no endpoints available for service "web"`,
		"/api/v1/namespaces/default/services/web:http/proxy/": `no endpoints available for service "web"`,
		"/api/v1/namespaces/default/services/web:81/proxy/":   `no service port 81 found for service "web"`,
	} {
		err := client.CoreV1().RESTClient().Get().AbsPath(path).Do(ctx).Error()
		if !apierrors.IsServiceUnavailable(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("GET %s: %v, want 503 %q", path, err, want)
		}
	}
	err = client.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/default/services/nope/proxy/").Do(ctx).Error()
	if !apierrors.IsNotFound(err) {
		t.Errorf("missing service: %v, want 404", err)
	}
}

// TestPodProxyRootRedirects: GET and HEAD of a pod's .../proxy (no path)
// answer 301 to .../proxy/, before any traffic, as upstream's proxy.
func TestPodProxyRootRedirects(t *testing.T) {
	api := envtest.Start(t)
	client := kubernetes.NewForConfigOrDie(api.Config)
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod, err := client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.PodIP, pod.Status.PodIPs = "10.42.0.8", []corev1.PodIP{{IP: "10.42.0.8"}}
	if _, err := client.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(api.Config)
	if err != nil {
		t.Fatal(err)
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, method := range []string{"GET", "HEAD"} {
		req, _ := http.NewRequest(method, api.Config.Host+"/api/v1/namespaces/default/pods/web/proxy?method="+method, nil)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusMovedPermanently || !strings.HasSuffix(strings.Split(loc, "?")[0], "/pods/web/proxy/") {
			t.Errorf("%s .../proxy: %d Location %q, want 301 to .../proxy/", method, resp.StatusCode, loc)
		}
	}
}
