package apiserver_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// evictionCase is a namespace with pods and at most one budget whose status
// is written by hand (no disruption controller runs here).
type evictionCase struct {
	t      *testing.T
	client kubernetes.Interface
	ns     string
}

func newEvictionCase(t *testing.T, client kubernetes.Interface, ns string) *evictionCase {
	t.Helper()
	if _, err := client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return &evictionCase{t: t, client: client, ns: ns}
}

// pod creates a pod bound to a node (so deletion is graceful and the pod
// stays visible) in phase, Ready or not.
func (c *evictionCase) pod(name string, phase corev1.PodPhase, ready bool) *corev1.Pod {
	c.t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	created, err := c.client.CoreV1().Pods(c.ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	created.Status.Phase = phase
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	created.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	updated, err := c.client.CoreV1().Pods(c.ns).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return updated
}

// budget creates a budget selecting app=web and writes its status as the
// disruption controller would have.
func (c *evictionCase) budget(name string, policy *policyv1.UnhealthyPodEvictionPolicyType, status policyv1.PodDisruptionBudgetStatus) *policyv1.PodDisruptionBudget {
	c.t.Helper()
	ctx := context.Background()
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: policyv1.PodDisruptionBudgetSpec{
		MinAvailable: ptr.To(intstr.FromInt32(1)), UnhealthyPodEvictionPolicy: policy,
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	created, err := c.client.PolicyV1().PodDisruptionBudgets(c.ns).Create(ctx, pdb, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	if status.ObservedGeneration == 0 {
		status.ObservedGeneration = created.Generation
	}
	created.Status = status
	updated, err := c.client.PolicyV1().PodDisruptionBudgets(c.ns).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return updated
}

// evict posts an Eviction as client-go's EvictV1 does, but without its
// retries after a 429 with Retry-After (which would wait out the refusal).
func (c *evictionCase) evict(name string, opts *metav1.DeleteOptions) error {
	eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.ns}, DeleteOptions: opts}
	return c.client.CoreV1().RESTClient().Post().MaxRetries(0).
		Namespace(c.ns).Resource("pods").Name(name).SubResource("eviction").Body(eviction).Do(context.Background()).Error()
}

func (c *evictionCase) getPod(name string) (*corev1.Pod, error) {
	return c.client.CoreV1().Pods(c.ns).Get(context.Background(), name, metav1.GetOptions{})
}

func (c *evictionCase) getBudget(name string) *policyv1.PodDisruptionBudget {
	c.t.Helper()
	pdb, err := c.client.PolicyV1().PodDisruptionBudgets(c.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return pdb
}

// mustBeEvicted checks that the pod is terminating with DisruptionTarget=True.
func (c *evictionCase) mustBeEvicted(name string) {
	c.t.Helper()
	pod, err := c.getPod(name)
	if err != nil {
		c.t.Fatal(err)
	}
	if pod.DeletionTimestamp == nil {
		c.t.Fatalf("pod %s is not terminating after its eviction", name)
	}
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.DisruptionTarget && cond.Status == corev1.ConditionTrue && cond.Reason == "EvictionByEvictionAPI" && cond.Message == "Eviction API: evicting" {
			return
		}
	}
	c.t.Fatalf("pod %s has no DisruptionTarget condition: %+v", name, pod.Status.Conditions)
}

// mustStay checks that the pod is neither deleted nor terminating nor marked.
func (c *evictionCase) mustStay(name string) {
	c.t.Helper()
	pod, err := c.getPod(name)
	if err != nil {
		c.t.Fatal(err)
	}
	if pod.DeletionTimestamp != nil {
		c.t.Fatalf("pod %s is terminating", name)
	}
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.DisruptionTarget {
			c.t.Fatalf("pod %s got a DisruptionTarget condition: %+v", name, cond)
		}
	}
}

// mustBeRefused checks for upstream's 429 with a DisruptionBudget cause.
func mustBeRefused(t *testing.T, err error, cause string, retryAfter int32) {
	t.Helper()
	var statusErr *apierrors.StatusError
	if !errors.As(err, &statusErr) {
		t.Fatalf("eviction error %v, want a 429 Status", err)
	}
	st := statusErr.ErrStatus
	if st.Code != http.StatusTooManyRequests || st.Reason != metav1.StatusReasonTooManyRequests ||
		st.Message != "Cannot evict pod as it would violate the pod's disruption budget." {
		t.Fatalf("status %d %s %q, want 429 TooManyRequests and upstream's message", st.Code, st.Reason, st.Message)
	}
	if st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Type != policyv1.DisruptionBudgetCause || st.Details.Causes[0].Message != cause {
		t.Fatalf("details %+v, want one DisruptionBudget cause %q", st.Details, cause)
	}
	if st.Details.RetryAfterSeconds != retryAfter {
		t.Fatalf("retryAfterSeconds %d, want %d", st.Details.RetryAfterSeconds, retryAfter)
	}
}

func TestEvictionAllowedTakesADisruption(t *testing.T) {
	_, client := newClient(t, "")
	c := newEvictionCase(t, client, "allowed")
	c.pod("a", corev1.PodRunning, true)
	c.pod("b", corev1.PodRunning, true)
	c.budget("budget", nil, policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 2, DesiredHealthy: 1, ExpectedPods: 2, DisruptionsAllowed: 1})
	if err := c.evict("a", nil); err != nil {
		t.Fatalf("eviction refused: %v", err)
	}
	c.mustBeEvicted("a")
	pdb := c.getBudget("budget")
	if _, ok := pdb.Status.DisruptedPods["a"]; !ok || pdb.Status.DisruptionsAllowed != 0 {
		t.Fatalf("budget status %+v, want a in disruptedPods and no disruption left", pdb.Status)
	}
	if cond := apimeta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition); cond == nil || cond.Reason != policyv1.InsufficientPodsReason {
		t.Fatalf("condition %+v, want InsufficientPods once the last disruption is taken", cond)
	}
	// The budget is used up: the next eviction is refused.
	mustBeRefused(t, c.evict("b", nil), "The disruption budget budget does not allow evicting pods currently", 0)
	c.mustStay("b")
}

func TestEvictionRefusedByBudget(t *testing.T) {
	srv, client := newClient(t, "")
	c := newEvictionCase(t, client, "refused")
	c.pod("a", corev1.PodRunning, true)
	c.budget("budget", nil, policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1})
	mustBeRefused(t, c.evict("a", nil), "The disruption budget budget needs 1 healthy pods and has 1 currently", 0)
	c.mustStay("a")

	// A budget the controller has not observed yet refuses too, for 10 seconds.
	lagging := newEvictionCase(t, client, "lagging")
	lagging.pod("a", corev1.PodRunning, true)
	pdb := lagging.budget("budget", nil, policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 1, DesiredHealthy: 0, ExpectedPods: 1, DisruptionsAllowed: 1})
	pdb.Spec.MinAvailable = ptr.To(intstr.FromInt32(0))
	if _, err := client.PolicyV1().PodDisruptionBudgets("lagging").Update(context.Background(), pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	mustBeRefused(t, lagging.evict("a", nil), "The disruption budget budget is still being processed by the server.", 10)
	lagging.mustStay("a")
	body := strings.NewReader(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"a"}}`)
	resp, err := http.Post(srv.URL+"/api/v1/namespaces/lagging/pods/a/eviction", "application/json", body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "10" {
		t.Fatalf("raw eviction answered %d with Retry-After %q, want 429 and 10", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

func TestEvictionDryRunChangesNothing(t *testing.T) {
	_, client := newClient(t, "")
	c := newEvictionCase(t, client, "dry")
	c.pod("a", corev1.PodRunning, true)
	c.budget("budget", nil, policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 1, DesiredHealthy: 0, ExpectedPods: 1, DisruptionsAllowed: 1})
	if err := c.evict("a", &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatalf("dry-run eviction refused: %v", err)
	}
	c.mustStay("a")
	if pdb := c.getBudget("budget"); pdb.Status.DisruptionsAllowed != 1 || len(pdb.Status.DisruptedPods) != 0 {
		t.Fatalf("a dry run changed the budget: %+v", pdb.Status)
	}
	// A dry run still answers as the real eviction would.
	c.budget("other", nil, policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1})
	err := c.evict("a", &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
	if st := (&apierrors.StatusError{}); !errors.As(err, &st) || st.ErrStatus.Code != http.StatusInternalServerError ||
		st.ErrStatus.Message != "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support." {
		t.Fatalf("eviction of a pod with two budgets: %v, want upstream's 500", err)
	}
	c.mustStay("a")
}

func TestEvictionOfUnreadyAndPendingPods(t *testing.T) {
	_, client := newClient(t, "")

	// The budget has the healthy pods it wants: an unready pod may go without
	// taking a disruption.
	healthy := newEvictionCase(t, client, "healthy")
	healthy.pod("ready", corev1.PodRunning, true)
	healthy.pod("unready", corev1.PodRunning, false)
	healthy.budget("budget", nil, policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 2})
	if err := healthy.evict("unready", nil); err != nil {
		t.Fatalf("eviction of an unready pod refused: %v", err)
	}
	healthy.mustBeEvicted("unready")
	if pdb := healthy.getBudget("budget"); len(pdb.Status.DisruptedPods) != 0 {
		t.Fatalf("an unready pod's eviction took a disruption: %+v", pdb.Status)
	}

	// A pending pod is deleted whatever the budget says.
	healthy.pod("pending", corev1.PodPending, false)
	if err := healthy.evict("pending", nil); err != nil {
		t.Fatalf("eviction of a pending pod refused: %v", err)
	}
	healthy.mustBeEvicted("pending")

	// IfHealthyBudget (the default) keeps unready pods of a disrupted application.
	disrupted := newEvictionCase(t, client, "disrupted")
	disrupted.pod("unready", corev1.PodRunning, false)
	disrupted.budget("budget", nil, policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 0, DesiredHealthy: 1, ExpectedPods: 1})
	mustBeRefused(t, disrupted.evict("unready", nil), "The disruption budget budget needs 1 healthy pods and has 0 currently", 0)
	disrupted.mustStay("unready")

	// AlwaysAllow lets it go.
	always := newEvictionCase(t, client, "always")
	always.pod("unready", corev1.PodRunning, false)
	always.budget("budget", ptr.To(policyv1.AlwaysAllow), policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 0, DesiredHealthy: 1, ExpectedPods: 1})
	if err := always.evict("unready", nil); err != nil {
		t.Fatalf("AlwaysAllow eviction refused: %v", err)
	}
	always.mustBeEvicted("unready")
}

func TestEvictionHonoursPreconditions(t *testing.T) {
	_, client := newClient(t, "")
	c := newEvictionCase(t, client, "pre")
	pod := c.pod("a", corev1.PodRunning, true)
	stale := "1"
	err := c.evict("a", &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &stale}})
	if !apierrors.IsConflict(err) {
		t.Fatalf("eviction with a stale resourceVersion: %v, want a conflict", err)
	}
	c.mustStay("a")
	if err := c.evict("a", &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID, ResourceVersion: &pod.ResourceVersion}}); err != nil {
		t.Fatalf("eviction with current preconditions: %v", err)
	}
	c.mustBeEvicted("a")
	if _, err := c.getPod("missing"); !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	if err := c.evict("missing", nil); !apierrors.IsNotFound(err) {
		t.Fatalf("eviction of a missing pod: %v, want NotFound", err)
	}
}
