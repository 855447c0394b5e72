package apiserver_test

import (
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"

	"orch/internal/envtest"
	"orch/internal/network"
	"orch/internal/pki"
)

// extensionServer is an aggregated API server for wardle.example.com/v1alpha1
// (flunders), and as a metrics-server would for metrics.k8s.io/v1beta1
// (one node, "from-the-extension-server"): it takes only clients with a certificate of the front proxy
// CA, as upstream's request-header authentication does, and answers a list
// of flunders with the user the headers name.
func extensionServer(t *testing.T, frontProxy pki.FrontProxy) (srv *httptest.Server, caBundle []byte) {
	// Its serving certificate names the service, as the apiserver checks.
	certs, err := pki.Ensure(pki.Config{Dir: t.TempDir(), Hostname: "wardle", ExtraSANs: []string{"wardle.team.svc"}})
	if err != nil {
		t.Fatal(err)
	}
	serving, err := certs.ServingCertificate()
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pki.CAPoolFromPEM(frontProxy.CACertPEM)
	if err != nil {
		t.Fatal(err)
	}
	srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) == 0 || r.TLS.PeerCertificates[0].Subject.CommonName != pki.FrontProxyClientName {
			http.Error(w, "not the front proxy", http.StatusUnauthorized)
			return
		}
		if r.Header.Get("Authorization") != "" {
			http.Error(w, "credentials leaked to the extension server", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/apis/wardle.example.com/v1alpha1":
			json.NewEncoder(w).Encode(&metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
				GroupVersion: "wardle.example.com/v1alpha1", APIResources: []metav1.APIResource{
					{Name: "flunders", SingularName: "flunder", Namespaced: true, Kind: "Flunder", Verbs: metav1.Verbs{"get", "list", "create"}},
					{Name: "flunders/status", Namespaced: true, Kind: "Flunder", Verbs: metav1.Verbs{"get", "update"}}}})
		case "/apis/metrics.k8s.io/v1beta1":
			json.NewEncoder(w).Encode(&metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
				GroupVersion: "metrics.k8s.io/v1beta1", APIResources: []metav1.APIResource{
					{Name: "nodes", SingularName: "", Kind: "NodeMetrics", Verbs: metav1.Verbs{"get", "list"}}}})
		case "/apis/metrics.k8s.io/v1beta1/nodes":
			json.NewEncoder(w).Encode(map[string]any{"apiVersion": "metrics.k8s.io/v1beta1", "kind": "NodeMetricsList",
				"metadata": map[string]any{}, "items": []any{map[string]any{"metadata": map[string]any{"name": "from-the-extension-server"}}}})
		case "/apis/wardle.example.com/v1alpha1/namespaces/team/flunders":
			fmtUser := r.Header.Get("X-Remote-User") + "|" + strings.Join(r.Header.Values("X-Remote-Group"), ",")
			json.NewEncoder(w).Encode(map[string]any{"apiVersion": "wardle.example.com/v1alpha1", "kind": "FlunderList",
				"metadata": map[string]any{}, "items": []any{map[string]any{"metadata": map[string]any{"name": fmtUser}}}})
		default:
			http.NotFound(w, r)
		}
	}))
	// Endpoints may not be loopback addresses: listen on the host's.
	ip := network.HostIP()
	if ip.IsLoopback() {
		t.Skip("this test needs a non-loopback address for the extension server's endpoint; the host has none")
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener.Close()
	srv.Listener = l
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool, Certificates: []tls.Certificate{serving}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, certs.CACertPEM
}

// serveServiceAt makes Service ns/name's port 443 lead to addr (a ready
// endpoint of a pod that has its IP), as the endpoints controller would.
func serveServiceAt(t *testing.T, client kubernetes.Interface, ns, name, addr string) {
	ctx := testContext(t)
	host, portText, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portText)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-1", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	pod = envtest.Create(t, client.CoreV1().Pods(ns).Create, pod)
	pod.Status.PodIP, pod.Status.PodIPs = host, []corev1.PodIP{{IP: host}}
	if _, err := client.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.Create(t, client.CoreV1().Services(ns).Create, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443}}}})
	envtest.Create(t, client.DiscoveryV1().EndpointSlices(ns).Create, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name + "-x", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(port))}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{host}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod.Name}}},
	})
}

// TestAggregation: an APIService with a service is proxied to its
// extension server as the calling user (front proxy headers and client
// certificate, no client credentials), its status says it is available,
// discovery (plain and aggregated) shows its group, and the
// extension-apiserver-authentication ConfigMap publishes the CAs.
func TestAggregation(t *testing.T) {
	srv, client := newClient(t, "team")
	ctx := testContext(t)
	ext, caBundle := extensionServer(t, srv.FrontProxy)
	serveServiceAt(t, client, "team", "wardle", ext.Listener.Addr().String())
	aggregator := aggregatorclient.NewForConfigOrDie(srv.Config)
	_, err := aggregator.ApiregistrationV1().APIServices().Create(ctx, &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: "v1alpha1.wardle.example.com"},
		Spec: apiregistrationv1.APIServiceSpec{Group: "wardle.example.com", Version: "v1alpha1",
			Service:  &apiregistrationv1.ServiceReference{Namespace: "team", Name: "wardle", Port: ptr.To(int32(443))},
			CABundle: caBundle, GroupPriorityMinimum: 2000, VersionPriority: 200},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// The list goes through as the impersonated user (authorized here
	// first: system:masters may do anything).
	as := kubernetes.NewForConfigOrDie(srv.ConfigAs("jane", "system:masters"))
	var body []byte
	envtest.Eventually(t, "the aggregated API to answer", func() (bool, error) {
		body, err = as.CoreV1().RESTClient().Get().AbsPath("/apis/wardle.example.com/v1alpha1/namespaces/team/flunders").DoRaw(ctx)
		return err == nil, nil
	})
	if !strings.Contains(string(body), `"name":"jane|system:masters,system:authenticated"`) {
		t.Errorf("the extension server saw %s, want user jane in system:masters and system:authenticated", body)
	}

	envtest.Eventually(t, "the APIService to be available", func() (bool, error) {
		svc, err := aggregator.ApiregistrationV1().APIServices().Get(ctx, "v1alpha1.wardle.example.com", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range svc.Status.Conditions {
			if c.Type == apiregistrationv1.Available && c.Status == apiregistrationv1.ConditionTrue {
				return c.Reason == "Passed" && c.Message == "all checks passed", nil
			}
		}
		return false, nil
	})
	// Discovery: the group is listed, and aggregated discovery (what
	// client-go asks first) knows its resources.
	groups, err := client.Discovery().ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	if !hasGroup(groups, "wardle.example.com") {
		t.Errorf("/apis lacks wardle.example.com: %+v", groups.Groups)
	}
	flunders := schema.GroupVersionResource{Group: "wardle.example.com", Version: "v1alpha1", Resource: "flunders"}
	envtest.Eventually(t, "discovery to list flunders", func() (bool, error) {
		resources, err := client.Discovery().ServerPreferredNamespacedResources()
		if err != nil {
			return false, nil
		}
		gvrs, err := discovery.GroupVersionResources(resources)
		_, ok := gvrs[flunders]
		return err == nil && ok, nil
	})

	cm, err := client.CoreV1().ConfigMaps("kube-system").Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		// kube-system is made by the namespace bootstrap, absent here.
		envtest.Create(t, client.CoreV1().Namespaces().Create, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}})
		envtest.Eventually(t, "the authentication ConfigMap", func() (bool, error) {
			cm, err = client.CoreV1().ConfigMaps("kube-system").Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
			return err == nil, nil
		})
	} else if err != nil {
		t.Fatal(err)
	}
	if cm.Data["requestheader-client-ca-file"] != string(srv.FrontProxy.CACertPEM) || cm.Data["requestheader-allowed-names"] != `["front-proxy-client"]` ||
		cm.Data["requestheader-username-headers"] != `["X-Remote-User"]` || cm.Data["requestheader-group-headers"] != `["X-Remote-Group"]` ||
		cm.Data["requestheader-extra-headers-prefix"] != `["X-Remote-Extra-"]` {
		t.Errorf("extension-apiserver-authentication = %v", cm.Data)
	}

	// The service gone, the APIService is unavailable and requests get 503.
	if err := client.CoreV1().Services("team").Delete(ctx, "wardle", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = client.CoreV1().RESTClient().Get().AbsPath("/apis/wardle.example.com/v1alpha1/namespaces/team/flunders").Do(ctx).Error()
	if !apierrors.IsServiceUnavailable(err) {
		t.Errorf("with the service gone: %v, want 503", err)
	}
}

func hasGroup(list *metav1.APIGroupList, name string) bool {
	for _, g := range list.Groups {
		if g.Name == name {
			return true
		}
	}
	return false
}
