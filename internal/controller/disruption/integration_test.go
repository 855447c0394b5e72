package disruption_test

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"orch/internal/controller/controllertest"
	"orch/internal/controller/disruption"
	"orch/internal/envtest"
)

func TestBudgetStatus(t *testing.T) {
	env := controllertest.New(t, "web", "bare", "broken", "stale", "evict")
	fake := clocktesting.NewFakeClock(time.Now())
	env.Context.Clock = fake
	env.Start(t, disruption.New(env.Context))
	client := env.Context.Client
	ctx := t.Context()

	t.Run("deployment scale and disrupted pods", func(t *testing.T) {
		rs := deploymentReplicaSet(t, client, "web", 3)
		for _, name := range []string{"w1", "w2", "w3"} {
			readyPod(t, client, "web", name, map[string]string{"app": "web"}, rs)
		}
		createBudget(t, client, "web", policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}})
		pdb := waitBudget(t, client, "web", "budget", func(s policyv1.PodDisruptionBudgetStatus) bool {
			return s.ExpectedPods == 3 && s.DesiredHealthy == 2 && s.CurrentHealthy == 3 && s.DisruptionsAllowed == 1
		})
		if pdb.Status.ObservedGeneration != pdb.Generation {
			t.Fatalf("observedGeneration %d, generation %d", pdb.Status.ObservedGeneration, pdb.Generation)
		}
		checkCondition(t, pdb, metav1.ConditionTrue, policyv1.SufficientPodsReason)

		// As pods/eviction would: w1 is recorded as disrupted now.
		setDisrupted(t, client, "web", "budget", "w1", fake.Now())
		pdb = waitBudget(t, client, "web", "budget", func(s policyv1.PodDisruptionBudgetStatus) bool {
			_, kept := s.DisruptedPods["w1"]
			return kept && s.CurrentHealthy == 2 && s.DisruptionsAllowed == 0
		})
		checkCondition(t, pdb, metav1.ConditionFalse, policyv1.InsufficientPodsReason)

		// w1 was never deleted: two minutes later the entry goes.
		envtest.EventuallyTrue(t, "the re-check timer", fake.HasWaiters)
		fake.Step(2*time.Minute + time.Second)
		waitBudget(t, client, "web", "budget", func(s policyv1.PodDisruptionBudgetStatus) bool {
			return len(s.DisruptedPods) == 0 && s.CurrentHealthy == 3 && s.DisruptionsAllowed == 1
		})
		waitEvent(t, client, "web", "w1", "NotDeleted")
	})

	t.Run("empty selector and integer minAvailable", func(t *testing.T) {
		readyPod(t, client, "bare", "b1", map[string]string{"x": "1"}, nil)
		readyPod(t, client, "bare", "b2", nil, nil)
		createBudget(t, client, "bare", policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{}})
		pdb := waitBudget(t, client, "bare", "budget", func(s policyv1.PodDisruptionBudgetStatus) bool {
			return s.ExpectedPods == 2 && s.DesiredHealthy == 1 && s.CurrentHealthy == 2 && s.DisruptionsAllowed == 1
		})
		checkCondition(t, pdb, metav1.ConditionTrue, policyv1.SufficientPodsReason)
	})

	t.Run("missing controller fails safe", func(t *testing.T) {
		gone := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "gone", UID: "0000-gone"}}
		readyPod(t, client, "broken", "orphan", map[string]string{"app": "x"}, gone)
		createBudget(t, client, "broken", policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromString("50%")),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}})
		pdb := waitBudget(t, client, "broken", "budget", func(s policyv1.PodDisruptionBudgetStatus) bool {
			return apimeta.IsStatusConditionPresentAndEqual(s.Conditions, policyv1.DisruptionAllowedCondition, metav1.ConditionFalse)
		})
		checkCondition(t, pdb, metav1.ConditionFalse, policyv1.SyncFailedReason)
		if pdb.Status.DisruptionsAllowed != 0 {
			t.Fatalf("disruptionsAllowed %d after a failed sync", pdb.Status.DisruptionsAllowed)
		}
		waitEvent(t, client, "broken", "budget", "CalculateExpectedPodCountFailed")
	})

	t.Run("evictions spend the budget", func(t *testing.T) {
		for _, name := range []string{"e1", "e2"} {
			readyPod(t, client, "evict", name, map[string]string{"app": "e"}, nil)
			// Pods bound to a node terminate gracefully and stay visible.
			binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}}
			if err := client.CoreV1().Pods("evict").Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		createBudget(t, client, "evict", policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "e"}}})
		waitBudget(t, client, "evict", "budget", func(s policyv1.PodDisruptionBudgetStatus) bool { return s.DisruptionsAllowed == 1 })
		evict := func(name string) error {
			return client.CoreV1().Pods("evict").EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "evict"}})
		}
		if err := evict("e1"); err != nil {
			t.Fatalf("first eviction refused: %v", err)
		}
		// e1 is terminating now: it no longer counts, and its disruptedPods
		// entry is dropped.
		waitBudget(t, client, "evict", "budget", func(s policyv1.PodDisruptionBudgetStatus) bool {
			return s.CurrentHealthy == 1 && s.DisruptionsAllowed == 0 && len(s.DisruptedPods) == 0
		})
		if err := evict("e2"); !apierrors.IsTooManyRequests(err) {
			t.Fatalf("second eviction: %v, want 429", err)
		}
	})

	t.Run("stale DisruptionTarget condition is reset", func(t *testing.T) {
		pod := readyPod(t, client, "stale", "s1", nil, nil)
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: "EvictionByEvictionAPI", LastTransitionTime: metav1.NewTime(fake.Now().Add(-3 * time.Minute))})
		if _, err := client.CoreV1().Pods("stale").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		envtest.EventuallyTrue(t, "the DisruptionTarget condition to be False", func() bool {
			p, err := client.CoreV1().Pods("stale").Get(ctx, "s1", metav1.GetOptions{})
			if err != nil {
				return false
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.DisruptionTarget {
					return c.Status == corev1.ConditionFalse
				}
			}
			return false
		})
	})
}

// deploymentReplicaSet creates a Deployment of replicas and a ReplicaSet it
// controls (no controllers run here, so nothing else creates pods).
func deploymentReplicaSet(t *testing.T, client kubernetes.Interface, ns string, replicas int32) *appsv1.ReplicaSet {
	t.Helper()
	labels := map[string]string{"app": "web"}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	d, err := client.AppsV1().Deployments(ns).Create(t.Context(), &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := client.AppsV1().ReplicaSets(ns).Create(t.Context(), &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID, Controller: ptr.To(true)}}},
		Spec:       appsv1.ReplicaSetSpec{Replicas: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// readyPod creates a pod (owned by rs when given) and marks it Running and Ready.
func readyPod(t *testing.T, client kubernetes.Interface, ns, name string, labels map[string]string, rs *appsv1.ReplicaSet) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	if rs != nil {
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}
	}
	created, err := client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.Phase = corev1.PodRunning
	created.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	updated, err := client.CoreV1().Pods(ns).UpdateStatus(t.Context(), created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return updated
}

func createBudget(t *testing.T, client kubernetes.Interface, ns string, spec policyv1.PodDisruptionBudgetSpec) {
	t.Helper()
	if _, err := client.PolicyV1().PodDisruptionBudgets(ns).Create(t.Context(), &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "budget"}, Spec: spec}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// setDisrupted records pod in status.disruptedPods, retrying on conflicts
// with the controller's own writes.
func setDisrupted(t *testing.T, client kubernetes.Interface, ns, name, pod string, at time.Time) {
	t.Helper()
	envtest.EventuallyTrue(t, "the disruptedPods entry to be written", func() bool {
		pdb, err := client.PolicyV1().PodDisruptionBudgets(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		pdb.Status.DisruptedPods = map[string]metav1.Time{pod: metav1.NewTime(at)}
		_, err = client.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(t.Context(), pdb, metav1.UpdateOptions{})
		if err != nil && !apierrors.IsConflict(err) {
			t.Fatal(err)
		}
		return err == nil
	})
}

func waitBudget(t *testing.T, client kubernetes.Interface, ns, name string, ok func(policyv1.PodDisruptionBudgetStatus) bool) *policyv1.PodDisruptionBudget {
	t.Helper()
	var pdb *policyv1.PodDisruptionBudget
	envtest.EventuallyTrue(t, "budget "+ns+"/"+name+" status", func() bool {
		var err error
		pdb, err = client.PolicyV1().PodDisruptionBudgets(ns).Get(t.Context(), name, metav1.GetOptions{})
		return err == nil && ok(pdb.Status)
	})
	return pdb
}

func checkCondition(t *testing.T, pdb *policyv1.PodDisruptionBudget, status metav1.ConditionStatus, reason string) {
	t.Helper()
	c := apimeta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition)
	if c == nil || c.Status != status || c.Reason != reason {
		t.Fatalf("DisruptionAllowed condition %+v, want %s/%s", c, status, reason)
	}
}

func waitEvent(t *testing.T, client kubernetes.Interface, ns, object, reason string) {
	t.Helper()
	envtest.EventuallyTrue(t, "event "+reason+" on "+object, func() bool {
		list, err := client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("involvedObject.name", object).String()})
		if err != nil {
			return false
		}
		for _, e := range list.Items {
			if e.Reason == reason && e.Source.Component == "controllermanager" {
				return true
			}
		}
		return false
	})
}
