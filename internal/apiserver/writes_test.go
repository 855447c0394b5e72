package apiserver_test

import (
	"net/http"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1apply "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1apply "k8s.io/client-go/applyconfigurations/core/v1"
	metav1apply "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"

	"orch/internal/envtest"
)

func deployment(name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1"}}},
			},
		},
	}
}

func TestStatusSubresourceAndGeneration(t *testing.T) {
	ctx := testContext(t)
	_, client := newClient(t, "gen")
	deploys := client.AppsV1().Deployments("gen")
	d, err := deploys.Create(ctx, deployment("web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Generation != 1 || *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		t.Fatalf("created: generation %d replicas %d strategy %q; want 1, 1 (default), RollingUpdate", d.Generation, *d.Spec.Replicas, d.Spec.Strategy.Type)
	}
	// Status through the main resource is ignored; labels do not bump generation.
	d.Status.Replicas = 7
	d.Labels = map[string]string{"x": "y"}
	if d, err = deploys.Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if d.Status.Replicas != 0 || d.Generation != 1 {
		t.Fatalf("after a metadata update: status.replicas %d generation %d; want 0 and 1", d.Status.Replicas, d.Generation)
	}
	// /status changes status only, and never the generation.
	d.Status.Replicas = 3
	d.Spec.Replicas = ptr.To[int32](9)
	if d, err = deploys.UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if d.Status.Replicas != 3 || *d.Spec.Replicas != 1 || d.Generation != 1 {
		t.Fatalf("after /status: status.replicas %d spec.replicas %d generation %d; want 3, 1, 1", d.Status.Replicas, *d.Spec.Replicas, d.Generation)
	}
	// A spec change bumps the generation and keeps the status.
	d.Spec.Replicas = ptr.To[int32](2)
	if d, err = deploys.Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if d.Generation != 2 || d.Status.Replicas != 3 {
		t.Fatalf("after a spec change: generation %d status.replicas %d; want 2 and 3", d.Generation, d.Status.Replicas)
	}
	// The scale subresource reads and writes spec.replicas.
	scale, err := deploys.GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil || scale.Spec.Replicas != 2 || scale.Status.Selector != "app=web" {
		t.Fatalf("scale = %+v, %v", scale, err)
	}
	scale.Spec.Replicas = 5
	if _, err := deploys.UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if d, _ = deploys.Get(ctx, "web", metav1.GetOptions{}); *d.Spec.Replicas != 5 || d.Generation != 3 {
		t.Fatalf("after scale: replicas %d generation %d; want 5 and 3", *d.Spec.Replicas, d.Generation)
	}
	// Immutable selector.
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}
	d.Spec.Template.Labels = map[string]string{"app": "other"}
	if _, err := deploys.Update(ctx, d, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("changing the selector: %v, want 422 Invalid", err)
	}
}

func TestFinalizersHoldDeletion(t *testing.T) {
	ctx := testContext(t)
	_, client := newClient(t, "fin")
	cms := client.CoreV1().ConfigMaps("fin")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}}
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	held, err := cms.Get(ctx, "held", metav1.GetOptions{})
	if err != nil || held.DeletionTimestamp == nil {
		t.Fatalf("after delete with a finalizer: %v, %v; want the object with deletionTimestamp", held, err)
	}
	held.Finalizers = nil
	if _, err := cms.Update(ctx, held, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "held", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after removing the last finalizer: %v, want NotFound", err)
	}
	// Foreground propagation adds its finalizer; preconditions are checked.
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fg"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wrongUID := types.UID("not-the-uid")
	if err := cms.Delete(ctx, "fg", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrongUID}}); !apierrors.IsConflict(err) {
		t.Fatalf("delete with a wrong UID precondition: %v, want 409", err)
	}
	if err := cms.Delete(ctx, "fg", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
		t.Fatal(err)
	}
	fg, err := cms.Get(ctx, "fg", metav1.GetOptions{})
	if err != nil || len(fg.Finalizers) != 1 || fg.Finalizers[0] != metav1.FinalizerDeleteDependents {
		t.Fatalf("after a foreground delete: %v, %v; want the foregroundDeletion finalizer", fg, err)
	}
}

// A pod being deleted gracefully stays, terminating, when its last
// finalizer goes: only a delete with grace period 0 (its kubelet's, once
// the containers stopped) removes it, as upstream.
func TestFinalizerRemovalKeepsTerminatingPod(t *testing.T) {
	ctx := testContext(t)
	_, client := newClient(t, "term")
	pods := client.CoreV1().Pods("term")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Finalizers: []string{"example.com/hold"}},
		Spec:       corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Image: "busybox:1"}}},
	}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	held, err := pods.Get(ctx, "p", metav1.GetOptions{})
	if err != nil || held.DeletionTimestamp == nil || ptr.Deref(held.DeletionGracePeriodSeconds, 0) != 30 {
		t.Fatalf("after a graceful delete: %v, %v; want the pod terminating with 30 s", held, err)
	}
	held.Finalizers = nil
	if _, err := pods.Update(ctx, held, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := pods.Get(ctx, "p", metav1.GetOptions{}); err != nil || got.DeletionTimestamp == nil {
		t.Fatalf("after its last finalizer went: %v, %v; want the pod still terminating", got, err)
	}
	if err := pods.Delete(ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "p", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after the kubelet's delete with grace period 0: %v, want NotFound", err)
	}
}

func TestDryRunStoresNothing(t *testing.T) {
	ctx := testContext(t)
	_, client := newClient(t, "dry")
	cms := client.CoreV1().ConfigMaps("dry")
	out, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ghost"}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil || out.UID == "" {
		t.Fatalf("dry-run create: %v, %v; want the object as it would be stored", out, err)
	}
	if _, err := cms.Get(ctx, "ghost", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after a dry-run create: %v, want NotFound", err)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "real"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "real", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "real", metav1.GetOptions{}); err != nil {
		t.Fatalf("after a dry-run delete: %v, want the object", err)
	}
}

func TestServerSideApply(t *testing.T) {
	ctx := testContext(t)
	_, client := newClient(t, "ssa")
	cms := client.CoreV1().ConfigMaps("ssa")
	apply := corev1apply.ConfigMap("cfg", "ssa").WithData(map[string]string{"a": "1"})
	cm, err := cms.Apply(ctx, apply, metav1.ApplyOptions{FieldManager: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["a"] != "1" || len(cm.ManagedFields) != 1 || cm.ManagedFields[0].Manager != "alice" || cm.ManagedFields[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Fatalf("applied: data %v managedFields %+v", cm.Data, cm.ManagedFields)
	}
	// Another manager applying the same field conflicts unless it forces.
	_, err = cms.Apply(ctx, corev1apply.ConfigMap("cfg", "ssa").WithData(map[string]string{"a": "2"}), metav1.ApplyOptions{FieldManager: "bob"})
	if !apierrors.IsConflict(err) {
		t.Fatalf("conflicting apply: %v, want 409 Conflict", err)
	}
	cm, err = cms.Apply(ctx, corev1apply.ConfigMap("cfg", "ssa").WithData(map[string]string{"a": "2"}), metav1.ApplyOptions{FieldManager: "bob", Force: true})
	if err != nil || cm.Data["a"] != "2" {
		t.Fatalf("forced apply: %v, %v", cm, err)
	}
	// Lists keyed by name merge: two managers own one container each.
	d := appsv1apply.Deployment("web", "ssa").WithSpec(appsv1apply.DeploymentSpec().
		WithSelector(metav1apply.LabelSelector().WithMatchLabels(map[string]string{"app": "web"})).
		WithTemplate(corev1apply.PodTemplateSpec().WithLabels(map[string]string{"app": "web"}).
			WithSpec(corev1apply.PodSpec().WithContainers(corev1apply.Container().WithName("a").WithImage("busybox:1")))))
	if _, err := client.AppsV1().Deployments("ssa").Apply(ctx, d, metav1.ApplyOptions{FieldManager: "alice"}); err != nil {
		t.Fatal(err)
	}
	sidecar := appsv1apply.Deployment("web", "ssa").WithSpec(appsv1apply.DeploymentSpec().
		WithTemplate(corev1apply.PodTemplateSpec().WithSpec(corev1apply.PodSpec().WithContainers(corev1apply.Container().WithName("b").WithImage("busybox:2")))))
	merged, err := client.AppsV1().Deployments("ssa").Apply(ctx, sidecar, metav1.ApplyOptions{FieldManager: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(merged.Spec.Template.Spec.Containers); n != 2 {
		t.Fatalf("after two managers applied one container each: %d containers, want 2", n)
	}

	// An apply to /status owns the status fields it sets, recorded for the
	// status subresource, so its next apply removes what it leaves out.
	status := appsv1apply.Deployment("web", "ssa").WithStatus(appsv1apply.DeploymentStatus().
		WithObservedGeneration(1).WithConditions(appsv1apply.DeploymentCondition().WithType(appsv1.DeploymentProgressing).WithStatus(corev1.ConditionTrue)))
	applied, err := client.AppsV1().Deployments("ssa").ApplyStatus(ctx, status, metav1.ApplyOptions{FieldManager: "carol"})
	if err != nil {
		t.Fatal(err)
	}
	var owned bool
	for _, m := range applied.ManagedFields {
		owned = owned || m.Manager == "carol" && m.Subresource == "status" && strings.Contains(string(m.FieldsV1.Raw), `"f:conditions"`)
	}
	if !owned {
		t.Fatalf("managedFields after a status apply: %+v, want carol owning status.conditions through status", applied.ManagedFields)
	}
	applied, err = client.AppsV1().Deployments("ssa").ApplyStatus(ctx, appsv1apply.Deployment("web", "ssa").WithStatus(appsv1apply.DeploymentStatus().WithObservedGeneration(1)),
		metav1.ApplyOptions{FieldManager: "carol"})
	if err != nil {
		t.Fatal(err)
	}
	if len(applied.Status.Conditions) != 0 {
		t.Errorf("conditions after carol's apply left them out: %+v, want none", applied.Status.Conditions)
	}
}

func TestServiceAllocation(t *testing.T) {
	ctx := testContext(t)
	_, client := newClient(t, "svc")
	services := client.CoreV1().Services("svc")
	svc := func(name string, typ corev1.ServiceType, ip string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{
			Type: typ, ClusterIP: ip, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Port: 80}},
		}}
	}
	a, err := services.Create(ctx, svc("a", corev1.ServiceTypeNodePort, ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Spec.ClusterIP == "" || a.Spec.ClusterIPs[0] != a.Spec.ClusterIP || a.Spec.Ports[0].NodePort < 30000 || a.Spec.Ports[0].TargetPort.IntValue() != 80 {
		t.Fatalf("NodePort service: clusterIP %q nodePort %d targetPort %v", a.Spec.ClusterIP, a.Spec.Ports[0].NodePort, a.Spec.Ports[0].TargetPort)
	}
	if _, err := services.Create(ctx, svc("b", corev1.ServiceTypeClusterIP, a.Spec.ClusterIP), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("a second service with the same cluster IP: %v, want 422", err)
	}
	if _, err := services.Create(ctx, svc("c", corev1.ServiceTypeClusterIP, "192.168.1.1"), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("a cluster IP outside the range: %v, want 422", err)
	}
	if err := services.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := services.Create(ctx, svc("d", corev1.ServiceTypeClusterIP, a.Spec.ClusterIP), metav1.CreateOptions{}); err != nil {
		t.Fatalf("reusing a released cluster IP: %v", err)
	}
	headless, err := services.Create(ctx, svc("h", corev1.ServiceTypeClusterIP, corev1.ClusterIPNone), metav1.CreateOptions{})
	if err != nil || headless.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Fatalf("headless service: %v, %v", headless, err)
	}

	// A LoadBalancer with externalTrafficPolicy Local gets a health check
	// node port, distinct from its node ports, kept across updates and
	// given back when the policy changes.
	local := svc("lb", corev1.ServiceTypeLoadBalancer, "")
	local.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	lb, err := services.Create(ctx, local, metav1.CreateOptions{})
	if err != nil || lb.Spec.HealthCheckNodePort < 30000 || lb.Spec.HealthCheckNodePort == lb.Spec.Ports[0].NodePort {
		t.Fatalf("Local LoadBalancer: healthCheckNodePort %d (node port %d), %v", lb.Spec.HealthCheckNodePort, lb.Spec.Ports[0].NodePort, err)
	}
	hc := lb.Spec.HealthCheckNodePort
	lb.Labels = map[string]string{"touched": "yes"}
	if lb, err = services.Update(ctx, lb, metav1.UpdateOptions{}); err != nil || lb.Spec.HealthCheckNodePort != hc {
		t.Fatalf("after an update: healthCheckNodePort %d, want %d (%v)", lb.Spec.HealthCheckNodePort, hc, err)
	}
	taken := svc("taken", corev1.ServiceTypeNodePort, "")
	taken.Spec.Ports[0].NodePort = hc
	if _, err := services.Create(ctx, taken, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("a node port equal to a health check node port: %v, want 422", err)
	}
	lb.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	if lb, err = services.Update(ctx, lb, metav1.UpdateOptions{}); err != nil || lb.Spec.HealthCheckNodePort != 0 {
		t.Fatalf("Cluster policy: healthCheckNodePort %d, %v; want 0", lb.Spec.HealthCheckNodePort, err)
	}
	if _, err := services.Create(ctx, taken, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the health check node port was not given back: %v", err)
	}
}

func TestPodsGetDefaultTolerations(t *testing.T) {
	ctx := testContext(t)
	_, client := newClient(t, "tol")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{
		Containers:  []corev1.Container{{Name: "c", Image: "i"}},
		Tolerations: []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](10)}},
	}}
	created, err := client.CoreV1().Pods("tol").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, tol := range created.Spec.Tolerations {
		got[tol.Key] = *tol.TolerationSeconds
	}
	if len(created.Spec.Tolerations) != 2 || got[corev1.TaintNodeNotReady] != 300 || got[corev1.TaintNodeUnreachable] != 10 {
		t.Fatalf("tolerations %+v: want not-ready for 300 s added and the pod's own unreachable for 10 s kept", created.Spec.Tolerations)
	}
	// An update that replaces the tolerations adds one and keeps those
	// the pod had: the defaults come back, as upstream's admission of
	// updates gives them.
	plain, err := client.CoreV1().Pods("tol").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	plain.Spec.Tolerations = []corev1.Toleration{{Key: "foo", Operator: corev1.TolerationOpEqual, Value: "bar", Effect: corev1.TaintEffectNoSchedule}}
	updated, err := client.CoreV1().Pods("tol").Update(ctx, plain, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("an update replacing the tolerations: %v", err)
	}
	if n := len(updated.Spec.Tolerations); n != 3 || updated.Generation != 2 {
		t.Errorf("after the update: %d tolerations %+v, generation %d; want 3 and 2", n, updated.Spec.Tolerations, updated.Generation)
	}
}

// TestUnconditionalUpdate: a PUT without metadata.resourceVersion replaces
// the stored object, as upstream allows for most resources.
func TestUnconditionalUpdate(t *testing.T) {
	ctx := testContext(t)
	_, client := newClient(t, "uncond")
	cms := client.CoreV1().ConfigMaps("uncond")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	updated, err := cms.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"v": "2"}}, metav1.UpdateOptions{})
	if err != nil || updated.Data["v"] != "2" {
		t.Fatalf("update without resourceVersion: %v, %v", updated, err)
	}
}

func TestPodPriorityFromClass(t *testing.T) {
	ctx := testContext(t)
	_, client := newClient(t, "prio")
	classes := client.SchedulingV1().PriorityClasses()
	if _, err := classes.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := func(name, class string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{PriorityClassName: class, Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	}
	p, err := client.CoreV1().Pods("prio").Create(ctx, pod("a", "high"), metav1.CreateOptions{})
	if err != nil || *p.Spec.Priority != 1000 || *p.Spec.PreemptionPolicy != corev1.PreemptLowerPriority {
		t.Fatalf("pod with class high: %v, %v", p.Spec.Priority, err)
	}
	if _, err := client.CoreV1().Pods("prio").Create(ctx, pod("b", "missing"), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("unknown class: %v, want 403", err)
	}
	p, err = client.CoreV1().Pods("prio").Create(ctx, pod("c", ""), metav1.CreateOptions{})
	if err != nil || *p.Spec.Priority != 0 {
		t.Fatalf("no class and no default: %v, %v", p.Spec.Priority, err)
	}
	if _, err := classes.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "dflt"}, Value: 7, GlobalDefault: true}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.EventuallyTrue(t, "the default class to be used", func() bool {
		p, err := client.CoreV1().Pods("prio").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "d-"}, Spec: pod("", "").Spec}, metav1.CreateOptions{})
		return err == nil && *p.Spec.Priority == 7 && p.Spec.PriorityClassName == "dflt"
	})
}

func TestBinding(t *testing.T) {
	ctx := testContext(t)
	_, client := newClient(t, "bind")
	pods := client.CoreV1().Pods("bind")
	p, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.NominatedNodeName = "n0"
	if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{"why": "test"}}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}
	if err := pods.Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bound, err := pods.Get(ctx, "p", metav1.GetOptions{})
	if err != nil || bound.Spec.NodeName != "n1" || bound.Status.NominatedNodeName != "" || bound.Annotations["why"] != "test" {
		t.Fatalf("bound pod: node %q nominated %q annotations %v, %v", bound.Spec.NodeName, bound.Status.NominatedNodeName, bound.Annotations, err)
	}
	scheduled := false
	for _, c := range bound.Status.Conditions {
		scheduled = scheduled || (c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue)
	}
	if !scheduled {
		t.Errorf("no PodScheduled=True condition: %+v", bound.Status.Conditions)
	}
	if err := pods.Bind(ctx, binding, metav1.CreateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("binding a bound pod: %v, want 409", err)
	}
}

// A delete that leaves the object in place answers 200 with it (a pod's
// graceful deletion, finalizers), 202 only when orphanDependents=false
// asked for its dependents' deletion, as upstream.
func TestDeleteStatusCodes(t *testing.T) {
	ctx := testContext(t)
	_, client := newClient(t, "codes")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	if _, err := client.CoreV1().Pods("codes").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"held", "orphans-not"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{"example.com/hold"}}}
		if _, err := client.CoreV1().ConfigMaps("codes").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		path, params string
		want         int
	}{
		{"pods/p", "gracePeriodSeconds=60", http.StatusOK},
		{"configmaps/held", "", http.StatusOK},
		{"configmaps/orphans-not", "orphanDependents=false", http.StatusAccepted},
	} {
		var code int
		req := client.CoreV1().RESTClient().Delete().AbsPath("/api/v1/namespaces/codes/" + tc.path)
		for _, kv := range strings.Split(tc.params, "&") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				req = req.Param(k, v)
			}
		}
		if err := req.Do(ctx).StatusCode(&code).Error(); err != nil || code != tc.want {
			t.Errorf("DELETE %s?%s: %d, %v; want %d", tc.path, tc.params, code, err, tc.want)
		}
	}

	// Deleting again what is being deleted writes nothing (as upstream's
	// pending graceful deletion): the resourceVersion stays, so a client's
	// update in between does not conflict. A shorter grace period is
	// written.
	before, err := client.CoreV1().ConfigMaps("codes").Get(ctx, "held", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := client.CoreV1().ConfigMaps("codes").Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if after, err := client.CoreV1().ConfigMaps("codes").Get(ctx, "held", metav1.GetOptions{}); err != nil || after.ResourceVersion != before.ResourceVersion {
		t.Errorf("resourceVersion %s before deleting it again, %s after (%v)", before.ResourceVersion, after.ResourceVersion, err)
	}
	pending, _ := client.CoreV1().Pods("codes").Get(ctx, "p", metav1.GetOptions{})
	if err := client.CoreV1().Pods("codes").Delete(ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](60)}); err != nil {
		t.Fatal(err)
	}
	if same, _ := client.CoreV1().Pods("codes").Get(ctx, "p", metav1.GetOptions{}); same.ResourceVersion != pending.ResourceVersion {
		t.Errorf("the same grace period again wrote the pod: resourceVersion %s, then %s", pending.ResourceVersion, same.ResourceVersion)
	}
	if err := client.CoreV1().Pods("codes").Delete(ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](5)}); err != nil {
		t.Fatal(err)
	}
	if shorter, _ := client.CoreV1().Pods("codes").Get(ctx, "p", metav1.GetOptions{}); shorter.DeletionGracePeriodSeconds == nil || *shorter.DeletionGracePeriodSeconds != 5 {
		t.Errorf("a shorter grace period: deletionGracePeriodSeconds %v, want 5", shorter.DeletionGracePeriodSeconds)
	}
}
