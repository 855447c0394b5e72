package podautoscaler

import (
	"context"
	"errors"
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned/typed/metrics/v1beta1"
	customclient "k8s.io/metrics/pkg/client/custom_metrics"
	externalclient "k8s.io/metrics/pkg/client/external_metrics"
)

// ResourceMetrics is where the controller reads the pods' resource usage:
// the PodMetrics (metrics.k8s.io/v1beta1) of the pods of namespace that
// selector matches. orch's apiserver serves that API itself; tests feed
// their own.
type ResourceMetrics interface {
	PodMetrics(ctx context.Context, namespace string, selector labels.Selector) ([]metricsv1beta1.PodMetrics, error)
}

// metricsAPI is ResourceMetrics over the resource metrics API.
type metricsAPI struct {
	client metricsclient.PodMetricsesGetter
}

var _ ResourceMetrics = metricsAPI{}

func (m metricsAPI) PodMetrics(ctx context.Context, namespace string, selector labels.Selector) ([]metricsv1beta1.PodMetrics, error) {
	list, err := m.client.PodMetricses(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// metricWindow is the window assumed for a custom metric sample that
// does not say its own.
const metricWindow = time.Minute

// resourceSamples turns PodMetrics into each pod's usage of resource, in
// milli-units: of container alone when it is named (a pod without that
// container has no sample), otherwise the sum over the pod's containers
// (a pod any of whose containers lacks the resource has no sample). The
// time returned is the first item's.
func resourceSamples(items []metricsv1beta1.PodMetrics, resource corev1.ResourceName, container string) (podMetrics, time.Time, error) {
	if len(items) == 0 {
		return nil, time.Time{}, errors.New("no metrics returned from resource metrics API")
	}
	out := make(podMetrics, len(items))
	for _, m := range items {
		sum, complete := int64(0), len(m.Containers) > 0
		found := false
		for _, c := range m.Containers {
			if container != "" && c.Name != container {
				continue
			}
			found = true
			q, ok := c.Usage[resource]
			if !ok {
				complete = false
				break
			}
			sum += q.MilliValue()
		}
		if complete && (container == "" || found) {
			out[m.Name] = podMetric{Timestamp: m.Timestamp.Time, Window: m.Window.Duration, Value: sum}
		}
	}
	return out, items[0].Timestamp.Time, nil
}

// extraMetrics reads the metrics that adapters serve: custom metrics of
// the pods or of one object (custom.metrics.k8s.io) and external metrics
// (external.metrics.k8s.io). Values are milli-values.
type extraMetrics interface {
	podsMetric(namespace, metric string, selector, metricSelector labels.Selector) (podMetrics, time.Time, error)
	objectMetric(namespace, metric string, ref *autoscalingv2.CrossVersionObjectReference, metricSelector labels.Selector) (int64, time.Time, error)
	externalMetric(namespace, metric string, metricSelector labels.Selector) ([]int64, time.Time, error)
}

// Group names of the metrics APIs adapters serve.
const (
	customMetricsGroup   = "custom.metrics.k8s.io"
	externalMetricsGroup = "external.metrics.k8s.io"
)

// adapterMetrics is extraMetrics over k8s.io/metrics' clients. orch
// serves neither API itself: they answer once an APIService registers an
// adapter, and until then fail saying that none is.
type adapterMetrics struct {
	custom    customclient.CustomMetricsClient
	external  externalclient.ExternalMetricsClient
	discovery discovery.DiscoveryInterface
}

var _ extraMetrics = (*adapterMetrics)(nil)

func (a *adapterMetrics) podsMetric(namespace, metric string, selector, metricSelector labels.Selector) (podMetrics, time.Time, error) {
	if err := a.registered(customMetricsGroup, "custom"); err != nil {
		return nil, time.Time{}, fmt.Errorf("unable to fetch metrics from custom metrics API: %w", err)
	}
	list, err := a.custom.NamespacedMetrics(namespace).GetForObjects(schema.GroupKind{Kind: "Pod"}, selector, metric, metricSelector)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("unable to fetch metrics from custom metrics API: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, time.Time{}, errors.New("no metrics returned from custom metrics API")
	}
	out := make(podMetrics, len(list.Items))
	for _, m := range list.Items {
		window := metricWindow
		if m.WindowSeconds != nil {
			window = time.Duration(*m.WindowSeconds) * time.Second
		}
		out[m.DescribedObject.Name] = podMetric{Timestamp: m.Timestamp.Time, Window: window, Value: m.Value.MilliValue()}
	}
	return out, list.Items[0].Timestamp.Time, nil
}

func (a *adapterMetrics) objectMetric(namespace, metric string, ref *autoscalingv2.CrossVersionObjectReference, metricSelector labels.Selector) (int64, time.Time, error) {
	if err := a.registered(customMetricsGroup, "custom"); err != nil {
		return 0, time.Time{}, fmt.Errorf("unable to fetch metrics from custom metrics API: %w", err)
	}
	gk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).GroupKind()
	metrics := a.custom.NamespacedMetrics(namespace)
	name := ref.Name
	if gk == (schema.GroupKind{Kind: "Namespace"}) {
		// A namespace's metric is the autoscaler's own namespace's.
		metrics, name = a.custom.RootScopedMetrics(), namespace
	}
	value, err := metrics.GetForObject(gk, name, metric, metricSelector)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("unable to fetch metrics from custom metrics API: %w", err)
	}
	return value.Value.MilliValue(), value.Timestamp.Time, nil
}

func (a *adapterMetrics) externalMetric(namespace, metric string, metricSelector labels.Selector) ([]int64, time.Time, error) {
	if err := a.registered(externalMetricsGroup, "external"); err != nil {
		return nil, time.Time{}, fmt.Errorf("unable to fetch metrics from external metrics API: %w", err)
	}
	list, err := a.external.NamespacedMetrics(namespace).List(metric, metricSelector)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("unable to fetch metrics from external metrics API: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, time.Time{}, errors.New("no metrics returned from external metrics API")
	}
	out := make([]int64, 0, len(list.Items))
	for _, m := range list.Items {
		out = append(out, m.Value.MilliValue())
	}
	return out, list.Items[0].Timestamp.Time, nil
}

// registered fails, saying why, unless discovery lists group (the kind of
// metrics API it is).
func (a *adapterMetrics) registered(group, kind string) error {
	groups, err := a.discovery.ServerGroups()
	if err != nil {
		return err
	}
	for _, g := range groups.Groups {
		if g.Name == group {
			return nil
		}
	}
	return fmt.Errorf("no %s metrics API (%s) is registered: it is served by a metrics adapter registered with an APIService "+
		"(orch itself serves only the resource metrics API, metrics.k8s.io)", kind, group)
}
