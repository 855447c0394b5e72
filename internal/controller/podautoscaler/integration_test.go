package podautoscaler_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"orch/internal/controller/controllertest"
	"orch/internal/controller/podautoscaler"
	"orch/internal/envtest"
)

const ns = "app"

// usage is the resource metrics the test feeds the controller: each pod's
// CPU usage, in millicores, for both of its containers' sum.
type usage struct {
	mu    sync.Mutex
	clock clock.PassiveClock
	pods  map[string]podUsage
}

type podUsage struct {
	labels labels.Set
	milli  int64
}

var _ podautoscaler.ResourceMetrics = (*usage)(nil)

func (u *usage) set(name string, l map[string]string, milli int64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.pods[name] = podUsage{labels.Set(l), milli}
}

func (u *usage) PodMetrics(_ context.Context, namespace string, selector labels.Selector) ([]metricsv1beta1.PodMetrics, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []metricsv1beta1.PodMetrics
	for name, p := range u.pods {
		if namespace != ns || !selector.Matches(p.labels) {
			continue
		}
		out = append(out, metricsv1beta1.PodMetrics{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
			Timestamp:  metav1.NewTime(u.clock.Now()), Window: metav1.Duration{Duration: time.Minute},
			Containers: []metricsv1beta1.ContainerMetrics{{Name: "c",
				Usage: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(p.milli, resource.DecimalSI)}}},
		})
	}
	return out, nil
}

// TestAutoscaling runs the controller on a real apiserver with a fake
// clock: it scales a Deployment up, holds a scale-down for the default
// stabilization window, scales a custom resource through its scale
// subresource at the pace of its behavior's policy, and reports what
// keeps it from scaling: metrics no adapter serves, a missing target, a
// target scaled to zero, two autoscalers of the same pods.
func TestAutoscaling(t *testing.T) {
	env := controllertest.New(t, ns)
	fake := clocktesting.NewFakeClock(time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC))
	env.Context.Clock = fake
	metrics := &usage{clock: fake, pods: map[string]podUsage{}}
	hpaController, err := podautoscaler.NewWithMetrics(env.Context, metrics)
	if err != nil {
		t.Fatal(err)
	}
	env.Start(t, hpaController)
	client := env.Context.Client
	hpas := client.AutoscalingV2().HorizontalPodAutoscalers(ns)
	deployments := client.AppsV1().Deployments(ns)

	// advance moves the fake clock a second at a time until cond holds,
	// letting the controller's delayed syncs come due.
	advance := func(t *testing.T, what string, cond func() (bool, error)) {
		t.Helper()
		envtest.Eventually(t, what, func() (bool, error) {
			fake.Step(time.Second)
			return cond()
		})
	}
	hpaStatus := func(name string, want func(*autoscalingv2.HorizontalPodAutoscaler) bool) func() (bool, error) {
		return func() (bool, error) {
			h, err := hpas.Get(context.Background(), name, metav1.GetOptions{})
			return err == nil && want(h), err
		}
	}

	t.Run("deployment", func(t *testing.T) {
		web := map[string]string{"app": "web"}
		envtest.Create(t, deployments.Create, deployment("web", 2, web))
		for i := range 2 {
			runningPod(t, client, fake, fmt.Sprintf("web-%d", i), web)
			metrics.set(fmt.Sprintf("web-%d", i), web, 100) // 100% of the request, twice the target
		}
		envtest.Create(t, hpas.Create, cpuHPA("web", autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}, 50, nil))
		envtest.Eventually(t, "the deployment scaled to 4", func() (bool, error) {
			d, err := deployments.Get(context.Background(), "web", metav1.GetOptions{})
			return err == nil && d.Spec.Replicas != nil && *d.Spec.Replicas == 4, err
		})
		envtest.Eventually(t, "the status of the scale-up", hpaStatus("web", func(h *autoscalingv2.HorizontalPodAutoscaler) bool {
			return h.Status.DesiredReplicas == 4 && h.Status.LastScaleTime != nil
		}))
		h := envtest.Get(t, hpas.Get, "web")
		if h.Status.CurrentReplicas != 2 || h.Status.ObservedGeneration == nil || *h.Status.ObservedGeneration != h.Generation {
			t.Errorf("status %+v, want currentReplicas 2 and the generation observed", h.Status)
		}
		wantConditions(t, h, map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{
			autoscalingv2.AbleToScale:    "True SucceededRescale the HPA controller was able to update the target scale to 4",
			autoscalingv2.ScalingActive:  "True ValidMetricFound the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)",
			autoscalingv2.ScalingLimited: "False DesiredWithinRange the desired count is within the acceptable range",
		})
		if m := h.Status.CurrentMetrics; len(m) != 1 || m[0].Type != autoscalingv2.ResourceMetricSourceType || m[0].Resource.Name != corev1.ResourceCPU ||
			*m[0].Resource.Current.AverageUtilization != 100 || m[0].Resource.Current.AverageValue.String() != "100m" {
			t.Errorf("currentMetrics %+v, want cpu at 100%% (100m)", m)
		}
		waitEvent(t, client, "web", "Normal SuccessfulRescale New size: 4; reason: cpu resource utilization (percentage of request) above target")
		firstScale := h.Status.LastScaleTime.Time

		// Load drops: the scale-down waits for the recommendations of
		// the last 5 minutes to fall.
		for i := range 4 {
			if i >= 2 {
				runningPod(t, client, fake, fmt.Sprintf("web-%d", i), web)
			}
			metrics.set(fmt.Sprintf("web-%d", i), web, 10)
		}
		advance(t, "the scale-down held by stabilization", hpaStatus("web", func(h *autoscalingv2.HorizontalPodAutoscaler) bool {
			return condition(h, autoscalingv2.AbleToScale) == "True ScaleDownStabilized recent recommendations were higher than current one, applying the highest recent recommendation"
		}))
		if d := envtest.Get(t, deployments.Get, "web"); *d.Spec.Replicas != 4 {
			t.Fatalf("the deployment has %d replicas while the scale-down is stabilized, want 4", *d.Spec.Replicas)
		}
		advance(t, "the deployment scaled down to minReplicas", func() (bool, error) {
			d, err := deployments.Get(context.Background(), "web", metav1.GetOptions{})
			return err == nil && *d.Spec.Replicas == 1, err
		})
		envtest.Eventually(t, "the status of the scale-down", hpaStatus("web", func(h *autoscalingv2.HorizontalPodAutoscaler) bool {
			return h.Status.DesiredReplicas == 1
		}))
		h = envtest.Get(t, hpas.Get, "web")
		if gap := h.Status.LastScaleTime.Sub(firstScale); gap < podautoscaler.DownscaleStabilization {
			t.Errorf("scaled down %v after scaling up, before the %v window passed", gap, podautoscaler.DownscaleStabilization)
		}
		waitEvent(t, client, "web", "Normal SuccessfulRescale New size: 1; reason: All metrics below target")
	})

	t.Run("custom resource", func(t *testing.T) {
		widgets := establishWidgets(t, env.Server.Config)
		widget := map[string]string{"app": "widget"}
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "w"}, "spec": map[string]any{"replicas": int64(1)}}}
		created, err := widgets.Create(context.Background(), obj, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Object["status"] = map[string]any{"replicas": int64(1), "selector": "app=widget"}
		if _, err := widgets.UpdateStatus(context.Background(), created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		runningPod(t, client, fake, "widget-0", widget)
		metrics.set("widget-0", widget, 400) // 8 times the target
		behavior := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
			Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60}}}}
		envtest.Create(t, hpas.Create, cpuHPA("widget", autoscalingv2.CrossVersionObjectReference{APIVersion: "example.com/v1", Kind: "Widget", Name: "w"}, 50, behavior))
		replicas := func(n int64) func() (bool, error) {
			return func() (bool, error) {
				w, err := widgets.Get(context.Background(), "w", metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				got, _, _ := unstructured.NestedInt64(w.Object, "spec", "replicas")
				return got == n, nil
			}
		}
		envtest.Eventually(t, "the widget scaled to 2 (one pod a minute)", replicas(2))
		envtest.Eventually(t, "the status of the first scale-up", hpaStatus("widget", func(h *autoscalingv2.HorizontalPodAutoscaler) bool {
			return h.Status.DesiredReplicas == 2 && condition(h, autoscalingv2.ScalingLimited) ==
				"True ScaleUpLimit the desired replica count is increasing faster than the maximum scale rate"
		}))
		first := envtest.Get(t, hpas.Get, "widget").Status.LastScaleTime.Time
		advance(t, "the widget scaled to 3", replicas(3))
		envtest.Eventually(t, "the status of the second scale-up", hpaStatus("widget", func(h *autoscalingv2.HorizontalPodAutoscaler) bool {
			return h.Status.DesiredReplicas == 3
		}))
		if gap := envtest.Get(t, hpas.Get, "widget").Status.LastScaleTime.Sub(first); gap < time.Minute {
			t.Errorf("scaled up again %v after the first scale-up, within the policy's minute", gap)
		}
	})

	t.Run("failures and conditions", func(t *testing.T) {
		api := map[string]string{"app": "api"}
		envtest.Create(t, deployments.Create, deployment("api", 1, api))
		h := cpuHPA("api", autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "api"}, 50, nil)
		h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: "requests_per_second"},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("10"))}}}}
		envtest.Create(t, hpas.Create, h)
		envtest.Eventually(t, "ScalingActive False", hpaStatus("api", func(h *autoscalingv2.HorizontalPodAutoscaler) bool {
			return strings.HasPrefix(condition(h, autoscalingv2.ScalingActive), "False FailedGetPodsMetric ")
		}))
		got := condition(envtest.Get(t, hpas.Get, "api"), autoscalingv2.ScalingActive)
		if want := "no custom metrics API (custom.metrics.k8s.io) is registered"; !strings.Contains(got, want) {
			t.Errorf("ScalingActive %q, want it to say %q", got, want)
		}
		waitEvent(t, client, "api", "Warning FailedGetPodsMetric unable to get metric requests_per_second: unable to fetch metrics from custom metrics API: no custom metrics API")

		missing := cpuHPA("missing", autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "nope"}, 50, nil)
		envtest.Create(t, hpas.Create, missing)
		envtest.Eventually(t, "AbleToScale False", hpaStatus("missing", func(h *autoscalingv2.HorizontalPodAutoscaler) bool {
			return strings.HasPrefix(condition(h, autoscalingv2.AbleToScale), "False FailedGetScale the HPA controller was unable to get the target's current scale: ")
		}))
		waitEvent(t, client, "missing", "Warning FailedGetScale")

		envtest.Create(t, deployments.Create, deployment("idle", 0, map[string]string{"app": "idle"}))
		envtest.Create(t, hpas.Create, cpuHPA("idle", autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "idle"}, 50, nil))
		envtest.Eventually(t, "ScalingDisabled", hpaStatus("idle", func(h *autoscalingv2.HorizontalPodAutoscaler) bool {
			return condition(h, autoscalingv2.ScalingActive) == "False ScalingDisabled scaling is disabled since the replica count of the target is zero"
		}))

		// A second autoscaler of the web Deployment's pods.
		envtest.Create(t, hpas.Create, cpuHPA("web-twin", autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}, 50, nil))
		envtest.Eventually(t, "AmbiguousSelector", hpaStatus("web-twin", func(h *autoscalingv2.HorizontalPodAutoscaler) bool {
			return condition(h, autoscalingv2.ScalingActive) ==
				"False AmbiguousSelector pods by selector app=web are controlled by more than one HPA (e.g. [app/web app/web-twin])"
		}))
	})
}

func deployment(name string, replicas int32, l map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: l},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l}, Spec: podSpec()}}}
}

func podSpec() corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}
}

// runningPod creates a pod with labels l that has been running and ready
// for ten minutes by the fake clock (no kubelet runs here).
func runningPod(t *testing.T, client kubernetes.Interface, c clock.PassiveClock, name string, l map[string]string) {
	t.Helper()
	pods := client.CoreV1().Pods(ns)
	pod := envtest.Create(t, pods.Create, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}, Spec: podSpec()})
	started := metav1.NewTime(c.Now().Add(-10 * time.Minute))
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &started,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: started}}}
	if _, err := pods.UpdateStatus(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func cpuHPA(name string, ref autoscalingv2.CrossVersionObjectReference, percent int32, b *autoscalingv2.HorizontalPodAutoscalerBehavior) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: ref, MinReplicas: ptr.To[int32](1), MaxReplicas: 10, Behavior: b,
		Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
			Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(percent)}}}}}}
}

// condition is "Status Reason Message" of h's condition t.
func condition(h *autoscalingv2.HorizontalPodAutoscaler, t autoscalingv2.HorizontalPodAutoscalerConditionType) string {
	for _, c := range h.Status.Conditions {
		if c.Type == t {
			return fmt.Sprintf("%s %s %s", c.Status, c.Reason, c.Message)
		}
	}
	return ""
}

func wantConditions(t *testing.T, h *autoscalingv2.HorizontalPodAutoscaler, want map[autoscalingv2.HorizontalPodAutoscalerConditionType]string) {
	t.Helper()
	for typ, w := range want {
		if got := condition(h, typ); got != w {
			t.Errorf("condition %s: %q, want %q", typ, got, w)
		}
	}
}

// waitEvent waits for an event about the autoscaler name that begins with prefix.
func waitEvent(t *testing.T, client kubernetes.Interface, name, prefix string) {
	t.Helper()
	envtest.EventuallyTrue(t, "event "+prefix, func() bool {
		return envtest.CountPrefix(envtest.Events(t, client, ns, "HorizontalPodAutoscaler", name), prefix) > 0
	})
}

// establishWidgets creates the CRD of widgets.example.com (a scale
// subresource whose selector is .status.selector), marks it established
// as the CRD controller would, and returns a client of its namespace
// once discovery lists it.
func establishWidgets(t *testing.T, cfg *rest.Config) dynamic.ResourceInterface {
	t.Helper()
	crds := apiextensionsclient.NewForConfigOrDie(cfg).ApiextensionsV1().CustomResourceDefinitions()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"replicas": {Type: "integer"}}},
						"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"replicas": {Type: "integer"}, "selector": {Type: "string"}}},
					}}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{
					Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
					Scale: &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas",
						StatusReplicasPath: ".status.replicas", LabelSelectorPath: ptr.To(".status.selector")},
				},
			}},
		},
	}
	created := envtest.Create(t, crds.Create, crd)
	created.Status.AcceptedNames = created.Spec.Names
	created.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{
		{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue, Reason: "NoConflicts"},
		{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue, Reason: "InitialNamesAccepted"},
	}
	if _, err := crds.UpdateStatus(context.Background(), created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	disco := kubernetes.NewForConfigOrDie(cfg).Discovery()
	envtest.Eventually(t, "widgets in discovery", func() (bool, error) {
		list, err := disco.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
		if err != nil {
			return false, nil // not yet
		}
		for _, r := range list.APIResources {
			if r.Name == "widgets/scale" {
				return true, nil
			}
		}
		return false, nil
	})
	return dynamic.NewForConfigOrDie(cfg).Resource(gvr).Namespace(ns)
}
