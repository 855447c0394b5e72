package apiserver_test

import (
	"encoding/json"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationv1apply "k8s.io/kube-aggregator/pkg/client/applyconfiguration/apiregistration/v1"
	"k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
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
		current, err := apiServices.Get(ctx, remote.Name, metav1.GetOptions{})
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
		current, err := apiServices.Get(ctx, remote.Name, metav1.GetOptions{})
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
		current, err := apiServices.Get(ctx, remote.Name, metav1.GetOptions{})
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

	body, err := v1client.RESTClient().Get().Resource("apiservices").SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
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
