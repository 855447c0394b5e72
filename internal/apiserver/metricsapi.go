package apiserver

import (
	"context"
	"math"
	"net/http"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// The resource metrics API (metrics.k8s.io/v1beta1 nodes and pods, what
// kubectl top and the HPA read) is served by the apiserver itself, from the
// kubelets' /stats/summary (metricsscrape.go), instead of by an aggregated
// metrics-server: get and list, with label selectors and the metadata.name
// and metadata.namespace field selectors.

var (
	nodeMetricsGR = metricsv1beta1.Resource("nodemetrics")
	podMetricsGR  = metricsv1beta1.Resource("podmetrics")
)

// metricsResources are the virtual resources of metrics.k8s.io.
func (s *Server) metricsResources() []*virtualResource {
	s.scraper = &metricsScraper{fetch: s.fetchSummary, now: s.now, log: s.log.With("component", "metrics"), nodes: map[string]*nodeScrape{}}
	gv, readOnly := metricsv1beta1.SchemeGroupVersion, metav1.Verbs{"get", "list"}
	return []*virtualResource{
		{gvr: gv.WithResource("nodes"), kind: "NodeMetrics", verbs: readOnly, read: s.serveNodeMetrics},
		{gvr: gv.WithResource("pods"), kind: "PodMetrics", namespaced: true, verbs: readOnly, read: s.servePodMetrics},
	}
}

func (s *Server) serveNodeMetrics(w http.ResponseWriter, r *http.Request, info requestInfo) {
	ctx, nodes := r.Context(), s.resources[corev1.SchemeGroupVersion.WithResource("nodes")]
	fail := func(err error) { s.respondError(w, r, err, nodeMetricsGR, info.Name) }
	if info.Name != "" {
		obj, err := nodes.get(ctx, "", info.Name)
		if isNotFound(err) {
			err = apierrors.NewNotFound(nodeMetricsGR, info.Name)
		}
		if err != nil {
			fail(err)
			return
		}
		items := s.nodeMetrics(ctx, []runtime.Object{obj})
		if len(items) == 0 {
			fail(apierrors.NewNotFound(nodeMetricsGR, info.Name))
			return
		}
		s.respond(w, r, http.StatusOK, &items[0])
		return
	}
	objs, err := s.metricsList(r, nodes, "")
	if err != nil {
		fail(err)
		return
	}
	s.respond(w, r, http.StatusOK, &metricsv1beta1.NodeMetricsList{Items: s.nodeMetrics(ctx, objs)})
}

func (s *Server) servePodMetrics(w http.ResponseWriter, r *http.Request, info requestInfo) {
	ctx, pods := r.Context(), s.resources[corev1.SchemeGroupVersion.WithResource("pods")]
	notFound := apierrors.NewNotFound(podMetricsGR, info.Namespace+"/"+info.Name)
	fail := func(err error) { s.respondError(w, r, err, podMetricsGR, info.Name) }
	if info.Name != "" {
		obj, err := pods.get(ctx, info.Namespace, info.Name)
		if isNotFound(err) {
			err = notFound
		}
		if err != nil {
			fail(err)
			return
		}
		items := s.podMetrics(ctx, []runtime.Object{obj})
		if len(items) == 0 {
			fail(notFound)
			return
		}
		s.respond(w, r, http.StatusOK, &items[0])
		return
	}
	objs, err := s.metricsList(r, pods, info.Namespace)
	if err != nil {
		fail(err)
		return
	}
	s.respond(w, r, http.StatusOK, &metricsv1beta1.PodMetricsList{Items: s.podMetrics(ctx, objs)})
}

// metricsList lists the nodes or pods a metrics list asks about, with
// its selectors (fields: metadata.name and metadata.namespace only, as the
// generic apiserver allows for metrics-server's types).
func (s *Server) metricsList(r *http.Request, rs *resourceStore, namespace string) ([]runtime.Object, error) {
	var opts metav1.ListOptions
	if err := s.decodeParams(r, &opts); err != nil {
		return nil, badRequest("invalid list options: %v", err)
	}
	sel := selection{labels: labels.Everything(), fields: fields.Everything(), rs: rs}
	var err error
	if opts.LabelSelector != "" {
		if sel.labels, err = labels.Parse(opts.LabelSelector); err != nil {
			return nil, badRequest("unable to parse labelSelector %q: %v", opts.LabelSelector, err)
		}
	}
	if opts.FieldSelector != "" {
		if sel.fields, err = fields.ParseSelector(opts.FieldSelector); err != nil {
			return nil, badRequest("unable to parse fieldSelector %q: %v", opts.FieldSelector, err)
		}
		for _, req := range sel.fields.Requirements() {
			if req.Field != "metadata.name" && req.Field != "metadata.namespace" {
				return nil, badRequest("field label not supported: %s", req.Field)
			}
		}
	}
	list, err := s.listObjects(r.Context(), rs, namespace, metav1.ListOptions{}, sel)
	if err != nil {
		return nil, err
	}
	return meta.ExtractList(list)
}

// nodeMetrics is the usage of the nodes whose kubelets answered, by name.
func (s *Server) nodeMetrics(ctx context.Context, objs []runtime.Object) []metricsv1beta1.NodeMetrics {
	nodes := make([]*corev1.Node, 0, len(objs))
	for _, o := range objs {
		nodes = append(nodes, o.(*corev1.Node))
	}
	usages := s.scraper.usage(ctx, nodes)
	items := []metricsv1beta1.NodeMetrics{}
	for _, n := range nodes {
		u := usages[n.Name]
		if u == nil || u.node == nil {
			continue
		}
		items = append(items, metricsv1beta1.NodeMetrics{
			ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels, CreationTimestamp: metav1.NewTime(s.now())},
			Timestamp:  metav1.NewTime(u.node.at), Window: metav1.Duration{Duration: u.node.window},
			Usage: resourceUsage(*u.node),
		})
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Name < items[j].Name })
	return items
}

// podMetrics is the usage of the pods found on nodes whose kubelets
// answered: the nodes the pods run on are scraped.
func (s *Server) podMetrics(ctx context.Context, objs []runtime.Object) []metricsv1beta1.PodMetrics {
	want := map[string]bool{}
	for _, o := range objs {
		if name := o.(*corev1.Pod).Spec.NodeName; name != "" {
			want[name] = true
		}
	}
	var nodes []*corev1.Node
	if len(want) > 0 {
		all, err := s.listObjects(ctx, s.resources[corev1.SchemeGroupVersion.WithResource("nodes")], "", metav1.ListOptions{}, selection{labels: labels.Everything(), fields: fields.Everything()})
		if err != nil {
			s.log.Error("metrics: cannot list nodes", "err", err)
			return []metricsv1beta1.PodMetrics{}
		}
		for i := range all.(*corev1.NodeList).Items {
			if n := &all.(*corev1.NodeList).Items[i]; want[n.Name] {
				nodes = append(nodes, n)
			}
		}
	}
	usages := s.scraper.usage(ctx, nodes)
	items := []metricsv1beta1.PodMetrics{}
	for _, o := range objs {
		pod := o.(*corev1.Pod)
		pu := findPod(usages[pod.Spec.NodeName], pod)
		if pu == nil {
			continue
		}
		pm := metricsv1beta1.PodMetrics{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, Labels: pod.Labels,
			CreationTimestamp: metav1.NewTime(s.now())}, Containers: []metricsv1beta1.ContainerMetrics{}}
		for i, c := range pu.containers {
			if i == 0 || c.at.Before(pm.Timestamp.Time) { // the earliest container's, as metrics-server
				pm.Timestamp, pm.Window = metav1.NewTime(c.at), metav1.Duration{Duration: c.window}
			}
			pm.Containers = append(pm.Containers, metricsv1beta1.ContainerMetrics{Name: c.name, Usage: resourceUsage(c.usage)})
		}
		items = append(items, pm)
	}
	sort.Slice(items, func(i, j int) bool {
		a, b := items[i], items[j]
		return a.Namespace < b.Namespace || (a.Namespace == b.Namespace && a.Name < b.Name)
	})
	return items
}

// findPod is pod's usage on its node: the one with its UID, or one the
// kubelet named without a UID.
func findPod(u *nodeUsage, pod *corev1.Pod) *podUsage {
	if u == nil {
		return nil
	}
	for _, pu := range u.pods[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}] {
		if pu.uid == "" || pu.uid == string(pod.UID) {
			return &pu
		}
	}
	return nil
}

// resourceUsage is u as cpu (nanocores) and memory (bytes) quantities.
func resourceUsage(u usage) corev1.ResourceList {
	clamp := func(v uint64) int64 { return int64(min(v, math.MaxInt64)) }
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewScaledQuantity(clamp(u.cpu), resource.Nano),
		corev1.ResourceMemory: *resource.NewQuantity(clamp(u.memory), resource.BinarySI),
	}
}
