package apiserver_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// Core and events.k8s.io Events are one store seen through two versions,
// as upstream: each sees, changes, watches and deletes the other's
// objects, with one resourceVersion.
func TestEventsOneStoreTwoVersions(t *testing.T) {
	_, client := newClient(t, "ev")
	ctx := testContext(t)
	now := metav1.NewMicroTime(time.Now().Truncate(time.Microsecond))
	w, err := client.EventsV1().Events("ev").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	core, err := client.CoreV1().Events("ev").Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "e1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "ev", Name: "web"},
		Reason:         "Started", Message: "started the container", Type: corev1.EventTypeNormal,
		Source: corev1.EventSource{Component: "kubelet"}, Count: 2,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		e, ok := ev.Object.(*eventsv1.Event)
		if ev.Type != watch.Added || !ok || e.Name != "e1" || e.Note != "started the container" || e.Regarding.Name != "web" || e.DeprecatedCount != 2 {
			t.Fatalf("events.k8s.io watch: %s %#v", ev.Type, ev.Object)
		}
	case <-ctx.Done():
		t.Fatal("the events.k8s.io watch did not see the core event")
	}
	got, err := client.EventsV1().Events("ev").Get(ctx, "e1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != core.ResourceVersion || got.UID != core.UID || got.DeprecatedSource.Component != "kubelet" {
		t.Errorf("events.k8s.io view %+v of core event %+v", got, core)
	}

	// Written through events.k8s.io, read through core.
	created, err := client.EventsV1().Events("ev").Create(ctx, &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "e2"},
		EventTime:  now, ReportingController: "example.com/ctl", ReportingInstance: "ctl-1",
		Action: "Scale", Reason: "Scaled", Type: corev1.EventTypeNormal, Note: "scaled",
		Regarding: corev1.ObjectReference{Kind: "Deployment", Namespace: "ev", Name: "web"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list, err := client.CoreV1().Events("ev").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Deployment"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Message != "scaled" || list.Items[0].ReportingController != "example.com/ctl" || list.Items[0].ResourceVersion != created.ResourceVersion {
		t.Fatalf("core list of the events.k8s.io event: %+v", list.Items)
	}
	if err := client.EventsV1().Events("ev").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if rest, err := client.CoreV1().Events("ev").List(ctx, metav1.ListOptions{}); err != nil || len(rest.Items) != 0 {
		t.Errorf("core events after an events.k8s.io deletecollection: %v %v", rest, err)
	}
}

// HorizontalPodAutoscalers are served at autoscaling/v1 and v2 from one
// store: what v1 cannot say travels in upstream's annotations.
func TestHPAVersions(t *testing.T) {
	_, client := newClient(t, "hpa")
	ctx := testContext(t)
	target := autoscalingv1.CrossVersionObjectReference{Kind: "Deployment", Name: "web", APIVersion: "apps/v1"}
	v1, err := client.AutoscalingV1().HorizontalPodAutoscalers("hpa").Create(ctx, &autoscalingv1.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       autoscalingv1.HorizontalPodAutoscalerSpec{ScaleTargetRef: target, MaxReplicas: 5, TargetCPUUtilizationPercentage: ptr.To[int32](60)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v1.Spec.MinReplicas == nil || *v1.Spec.MinReplicas != 1 {
		t.Errorf("v1 minReplicas = %v, want the default 1", v1.Spec.MinReplicas)
	}
	v2, err := client.AutoscalingV2().HorizontalPodAutoscalers("hpa").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(v2.Spec.Metrics) != 1 || v2.Spec.Metrics[0].Resource == nil || *v2.Spec.Metrics[0].Resource.Target.AverageUtilization != 60 || v2.ResourceVersion != v1.ResourceVersion {
		t.Fatalf("v2 view of the v1 object: %+v", v2.Spec)
	}
	v2.Spec.Metrics = append(v2.Spec.Metrics, autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "qps"},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("10"))},
	}})
	if _, err := client.AutoscalingV2().HorizontalPodAutoscalers("hpa").Update(ctx, v2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	v1, err = client.AutoscalingV1().HorizontalPodAutoscalers("hpa").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *v1.Spec.TargetCPUUtilizationPercentage != 60 || v1.Annotations["autoscaling.alpha.kubernetes.io/metrics"] == "" {
		t.Fatalf("v1 view of the v2 object with a pods metric: %+v %v", v1.Spec, v1.Annotations)
	}
	// A v1 round trip keeps the pods metric.
	v1.Spec.MaxReplicas = 7
	if _, err := client.AutoscalingV1().HorizontalPodAutoscalers("hpa").Update(ctx, v1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	v2, err = client.AutoscalingV2().HorizontalPodAutoscalers("hpa").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v2.Spec.MaxReplicas != 7 || len(v2.Spec.Metrics) != 2 || len(v2.Annotations) != 0 {
		t.Errorf("after a v1 update: %+v, annotations %v", v2.Spec, v2.Annotations)
	}
	if _, err := client.AutoscalingV1().HorizontalPodAutoscalers("hpa").Create(ctx, &autoscalingv1.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec:       autoscalingv1.HorizontalPodAutoscalerSpec{ScaleTargetRef: target, MaxReplicas: 0},
	}, metav1.CreateOptions{}); err == nil {
		t.Error("a v1 HPA with maxReplicas 0 was accepted")
	}
}

// A review asked for as a Table answers 406 Not Acceptable: it has no
// metadata to print, as upstream's.
func TestReviewAsTableNotAcceptable(t *testing.T) {
	srv, _ := newClient(t, "")
	hc, err := rest.HTTPClientFor(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"nonResourceAttributes":{"path":"/","verb":"get"}}}`
	req, _ := http.NewRequest("POST", srv.Config.Host+"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotAcceptable {
		t.Errorf("a review as a Table: %d, want 406", resp.StatusCode)
	}
}
