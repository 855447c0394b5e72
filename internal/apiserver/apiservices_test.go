package apiserver_test

import (
	"crypto/tls"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationv1apply "k8s.io/kube-aggregator/pkg/client/applyconfiguration/apiregistration/v1"
	"k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"

	"orch/internal/envtest"
)

// TestAPIServices drives apiregistration.k8s.io/v1 apiservices through the
// handlers: upstream's create preparation, defaults and validation, the
// status subresource, server-side apply and the table.
func TestAPIServices(t *testing.T) {
	ctx := testContext(t)
	srv, _ := newClient(t, "")
	v1client := clientset.NewForConfigOrDie(srv.Config).ApiregistrationV1()
	apiServices := v1client.APIServices()
	spec := apiregistrationv1.APIServiceSpec{Group: "example.com", Version: "v1", GroupPriorityMinimum: 1000, VersionPriority: 15}

	local, err := apiServices.Create(ctx, &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1.example.com"}, Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := local.Status.Conditions; len(c) != 1 || c[0].Type != apiregistrationv1.Available || c[0].Status != apiregistrationv1.ConditionTrue || c[0].Reason != "Local" {
		t.Errorf("a local APIService starts available: %+v", local.Status)
	}
	if len(local.ManagedFields) == 0 {
		t.Errorf("no managed fields: %+v", local.ObjectMeta)
	}

	spec.Version = "v1beta1"
	spec.Service = &apiregistrationv1.ServiceReference{Namespace: "kube-system", Name: "example-api"}
	stale := apiregistrationv1.APIServiceStatus{Conditions: []apiregistrationv1.APIServiceCondition{{Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionTrue, Reason: "Made up"}}}
	remote, err := apiServices.Create(ctx, &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1beta1.example.com"}, Spec: spec, Status: stale}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *remote.Spec.Service.Port != 443 || len(remote.Status.Conditions) != 0 {
		t.Errorf("created: port %d, status %+v; want 443 and an empty status", *remote.Spec.Service.Port, remote.Status)
	}

	_, err = apiServices.Create(ctx, &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "example"}, Spec: spec}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `metadata.name: Invalid value: "example": must be `+"`spec.version+\".\"+spec.group`") {
		t.Errorf("a name that is not version.group: %v", err)
	}

	// The main resource changes the spec, never the status. (The
	// availability checks write the status meanwhile: writes retry.)
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := apiServices.Get(ctx, "v1beta1.example.com", metav1.GetOptions{})
		if err != nil {
			return err
		}
		current.Spec.GroupPriorityMinimum = 2000
		current.Status = stale
		remote, err = apiServices.Update(ctx, current, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if remote.Spec.GroupPriorityMinimum != 2000 || len(remote.Status.Conditions) > 0 && remote.Status.Conditions[0].Reason == "Made up" {
		t.Errorf("after an update: priority %d, status %+v; want 2000 and the stored status", remote.Spec.GroupPriorityMinimum, remote.Status)
	}

	// /status changes the status, never the spec.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := apiServices.Get(ctx, "v1beta1.example.com", metav1.GetOptions{})
		if err != nil {
			return err
		}
		current.Spec.GroupPriorityMinimum = 3000
		current.Status.Conditions = []apiregistrationv1.APIServiceCondition{{Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionFalse, Reason: "MissingEndpoints"}}
		remote, err = apiServices.UpdateStatus(ctx, current, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if remote.Spec.GroupPriorityMinimum != 2000 || len(remote.Status.Conditions) != 1 || remote.Status.Conditions[0].Reason != "MissingEndpoints" {
		t.Errorf("after a status update: priority %d, status %+v; want 2000 and the new condition", remote.Spec.GroupPriorityMinimum, remote.Status)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := apiServices.Get(ctx, "v1beta1.example.com", metav1.GetOptions{})
		if err != nil {
			return err
		}
		current.Status.Conditions = []apiregistrationv1.APIServiceCondition{{Type: apiregistrationv1.Available, Status: "Maybe"}}
		_, err = apiServices.UpdateStatus(ctx, current, metav1.UpdateOptions{})
		return err
	})
	if !apierrors.IsInvalid(err) {
		t.Errorf("a condition status of Maybe: %v, want Invalid", err)
	}

	// Server-side apply knows the type.
	apply := apiregistrationv1apply.APIService("v1.example.com").WithSpec(apiregistrationv1apply.APIServiceSpec().
		WithGroup("example.com").WithVersion("v1").WithGroupPriorityMinimum(1000).WithVersionPriority(20))
	if local, err = apiServices.Apply(ctx, apply, metav1.ApplyOptions{FieldManager: "test", Force: true}); err != nil {
		t.Fatal(err)
	}
	if local.Spec.VersionPriority != 20 {
		t.Errorf("applied: versionPriority %d, want 20", local.Spec.VersionPriority)
	}

	// (Those the server registers for itself are left out.)
	body, err := v1client.RESTClient().Get().Resource("apiservices").Param("labelSelector", "!kube-aggregator.kubernetes.io/automanaged").SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		t.Fatal(err)
	}
	var cells []string
	for _, c := range table.ColumnDefinitions {
		cells = append(cells, c.Name)
	}
	for _, r := range table.Rows {
		for _, c := range r.Cells[:3] {
			cells = append(cells, c.(string))
		}
	}
	// The availability checks say why the remote one is unavailable.
	want := "Name Service Available Age v1.example.com Local True v1beta1.example.com kube-system/example-api False ("
	if got := strings.Join(cells, " "); !strings.HasPrefix(got, want) {
		t.Errorf("table:\n got  %s\n want %s", got, want)
	}

	// kubectl explain finds the type.
	doc, err := v1client.RESTClient().Get().AbsPath("/openapi/v3/apis/apiregistration.k8s.io/v1").DoRaw(ctx)
	if err != nil || !strings.Contains(string(doc), `"io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService"`) {
		t.Errorf("openapi v3 document of apiregistration.k8s.io/v1: %v %.200s", err, doc)
	}
}

// apiServiceFor waits until the APIService name exists, and returns it.
func apiServiceFor(t *testing.T, client clientset.Interface, name string) *apiregistrationv1.APIService {
	t.Helper()
	var svc *apiregistrationv1.APIService
	envtest.Eventually(t, "APIService "+name, func() (bool, error) {
		var err error
		svc, err = client.ApiregistrationV1().APIServices().Get(testContext(t), name, metav1.GetOptions{})
		return err == nil, nil
	})
	return svc
}

// TestAutoRegisteredAPIServices: every group version the server serves
// has a local APIService, as upstream's: the built-in ones made at start
// (and left to the user after), those of CRDs following the CRDs, and
// metrics.k8s.io's only made when missing, so that a metrics-server can
// take it over.
func TestAutoRegisteredAPIServices(t *testing.T) {
	srv, client := newClientWith(t, "team", envtest.Options{KubeletTLS: &tls.Config{}})
	ctx := testContext(t)
	aggregator := clientset.NewForConfigOrDie(srv.Config)

	for name, want := range map[string]apiregistrationv1.APIServiceSpec{
		"v1.":                             {Group: "", Version: "v1", GroupPriorityMinimum: 18000, VersionPriority: 1},
		"v1.apps":                         {Group: "apps", Version: "v1", GroupPriorityMinimum: 17800, VersionPriority: 15},
		"v2.autoscaling":                  {Group: "autoscaling", Version: "v2", GroupPriorityMinimum: 17500, VersionPriority: 30},
		"v1.flowcontrol.apiserver.k8s.io": {Group: "flowcontrol.apiserver.k8s.io", Version: "v1", GroupPriorityMinimum: 16100, VersionPriority: 21},
		"v1.admissionregistration.k8s.io": {Group: "admissionregistration.k8s.io", Version: "v1", GroupPriorityMinimum: 16700, VersionPriority: 15},
		"v1.authentication.k8s.io":        {Group: "authentication.k8s.io", Version: "v1", GroupPriorityMinimum: 17700, VersionPriority: 15},
	} {
		svc := apiServiceFor(t, aggregator, name)
		if !reflect.DeepEqual(svc.Spec, want) || svc.Labels["kube-aggregator.kubernetes.io/automanaged"] != "onstart" {
			t.Errorf("%s: spec %+v, labels %v; want %+v, automanaged onstart", name, svc.Spec, svc.Labels, want)
		}
		if c := svc.Status.Conditions; len(c) != 1 || c[0].Status != apiregistrationv1.ConditionTrue || c[0].Reason != "Local" {
			t.Errorf("%s: status %+v, want available (Local)", name, svc.Status)
		}
	}
	// The server's whole set: one per built-in group version but the
	// aggregator's own group, as upstream lists them.
	groups, err := client.Discovery().ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"v1.": true}
	for _, g := range groups.Groups {
		for _, v := range g.Versions {
			if g.Name != "apiregistration.k8s.io" && g.Name != "metrics.k8s.io" {
				want[v.Version+"."+g.Name] = true
			}
		}
	}
	got := map[string]bool{}
	envtest.Eventually(t, "an APIService for every built-in group version", func() (bool, error) {
		list, err := aggregator.ApiregistrationV1().APIServices().List(ctx, metav1.ListOptions{LabelSelector: "kube-aggregator.kubernetes.io/automanaged=onstart"})
		if err != nil {
			return false, err
		}
		clear(got)
		for _, svc := range list.Items {
			got[svc.Name] = true
		}
		return reflect.DeepEqual(got, want), nil
	})

	metrics := apiServiceFor(t, aggregator, "v1beta1.metrics.k8s.io")
	if metrics.Spec.Service != nil || metrics.Labels["kube-aggregator.kubernetes.io/automanaged"] != "" || metrics.Spec.GroupPriorityMinimum != 100 {
		t.Errorf("metrics.k8s.io's APIService: %+v, labels %v; want local, not automanaged, priority 100", metrics.Spec, metrics.Labels)
	}

	// A CRD's served versions get APIServices kept in step with it.
	crd := widgetCRD()
	establish(t, srv.Config, crd, widgets)
	custom := apiServiceFor(t, aggregator, "v1.example.com")
	if custom.Spec.GroupPriorityMinimum != 1000 || custom.Spec.VersionPriority != 100 || custom.Spec.Service != nil ||
		custom.Labels["kube-aggregator.kubernetes.io/automanaged"] != "true" {
		t.Errorf("the CRD's APIService: %+v, labels %v", custom.Spec, custom.Labels)
	}
	crds := apiextensionsclient.NewForConfigOrDie(srv.Config).ApiextensionsV1().CustomResourceDefinitions()
	if err := crds.Delete(ctx, crd.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		got.Finalizers = nil
		_, err = crds.Update(ctx, got, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "the CRD's APIService to go", func() (bool, error) {
		_, err := aggregator.ApiregistrationV1().APIServices().Get(ctx, "v1.example.com", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})

	// A metrics-server takes over metrics.k8s.io: requests and discovery
	// go to it; handing the APIService back to the server restores orch's.
	ext, caBundle := extensionServer(t, srv.FrontProxy)
	serveServiceAt(t, client, "team", "wardle", ext.Listener.Addr().String())
	point := func(service *apiregistrationv1.ServiceReference, caBundle []byte) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			svc, err := aggregator.ApiregistrationV1().APIServices().Get(ctx, "v1beta1.metrics.k8s.io", metav1.GetOptions{})
			if err != nil {
				return err
			}
			svc.Spec.Service, svc.Spec.CABundle = service, caBundle
			_, err = aggregator.ApiregistrationV1().APIServices().Update(ctx, svc, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	nodeMetrics := func() string {
		body, err := client.CoreV1().RESTClient().Get().AbsPath("/apis/metrics.k8s.io/v1beta1/nodes").DoRaw(ctx)
		if err != nil {
			return err.Error()
		}
		return string(body)
	}
	point(&apiregistrationv1.ServiceReference{Namespace: "team", Name: "wardle", Port: ptr.To(int32(443))}, caBundle)
	envtest.Eventually(t, "metrics.k8s.io served by the extension server", func() (bool, error) {
		return strings.Contains(nodeMetrics(), "from-the-extension-server"), nil
	})
	envtest.Eventually(t, "discovery to list metrics.k8s.io once, from the extension server", func() (bool, error) {
		groups, err := client.Discovery().ServerGroups()
		if err != nil {
			return false, err
		}
		n := 0
		for _, g := range groups.Groups {
			if g.Name == "metrics.k8s.io" {
				n++
			}
		}
		resources, err := client.Discovery().ServerResourcesForGroupVersion("metrics.k8s.io/v1beta1")
		return n == 1 && err == nil && len(resources.APIResources) == 1, nil
	})
	point(nil, nil)
	envtest.Eventually(t, "metrics.k8s.io served by the server again", func() (bool, error) {
		body := nodeMetrics()
		return strings.Contains(body, `"kind":"NodeMetricsList"`) && !strings.Contains(body, "from-the-extension-server"), nil
	})
}
