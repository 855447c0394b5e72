package deployment

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"orch/internal/controller"
	"orch/internal/controller/controllertest"
	"orch/internal/controller/replicaset"
	"orch/internal/envtest"
)

var bg = context.Background()

// cluster is a real apiserver on embedded etcd running the deployment and
// replicaset controllers; the test plays the kubelet.
type cluster struct {
	t      *testing.T
	client kubernetes.Interface
	config *rest.Config
	ns     string
	// cached are the ReplicaSets as the controller's informer sees them.
	cached appslisters.ReplicaSetLister
}

func startCluster(t *testing.T, clk clock.WithTicker) *cluster {
	t.Helper()
	env := controllertest.New(t, "default")
	env.Context.Clock = clk
	env.Start(t, New(env.Context), replicaset.New(env.Context))
	return &cluster{t: t, client: env.Context.Client, config: env.Server.Config, ns: "default",
		cached: env.Informers.Apps().V1().ReplicaSets().Lister()}
}

func newDeployment(name string, replicas int32, image string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
			},
		},
	}
}

func withRolling(d *appsv1.Deployment, surge, unavailable string) *appsv1.Deployment {
	s, u := intstr.Parse(surge), intstr.Parse(unavailable)
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u}}
	return d
}

func (c *cluster) create(d *appsv1.Deployment) *appsv1.Deployment {
	c.t.Helper()
	out, err := c.client.AppsV1().Deployments(c.ns).Create(bg, d, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return out
}

func (c *cluster) deployment(name string) *appsv1.Deployment {
	c.t.Helper()
	d, err := c.client.AppsV1().Deployments(c.ns).Get(bg, name, metav1.GetOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return d
}

// update applies change to the latest version of the Deployment.
func (c *cluster) update(name string, change func(*appsv1.Deployment)) *appsv1.Deployment {
	c.t.Helper()
	for {
		d := c.deployment(name)
		change(d)
		out, err := c.client.AppsV1().Deployments(c.ns).Update(bg, d, metav1.UpdateOptions{})
		if err == nil {
			return out
		}
		if !strings.Contains(err.Error(), "modified") && !strings.Contains(err.Error(), "onflict") {
			c.t.Fatal(err)
		}
	}
}

func setImage(image string) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = image }
}

// replicaSets returns the Deployment's ReplicaSets, oldest first.
func (c *cluster) replicaSets(app string) []appsv1.ReplicaSet {
	c.t.Helper()
	list, err := c.client.AppsV1().ReplicaSets(c.ns).List(bg, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		c.t.Fatal(err)
	}
	sort.Slice(list.Items, func(i, j int) bool {
		return list.Items[i].CreationTimestamp.Before(&list.Items[j].CreationTimestamp) || list.Items[i].Name < list.Items[j].Name && list.Items[i].CreationTimestamp.Equal(&list.Items[j].CreationTimestamp)
	})
	return list.Items
}

func (c *cluster) pods(app string) []corev1.Pod {
	c.t.Helper()
	list, err := c.client.CoreV1().Pods(c.ns).List(bg, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		c.t.Fatal(err)
	}
	return list.Items
}

// kubeletReady plays the kubelet: the pod runs and is ready since since.
// A pod that changed or went meanwhile is skipped.
func (c *cluster) kubeletReady(pod corev1.Pod, since time.Time) {
	t := metav1.NewTime(since)
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: t},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: t},
	}}
	_, _ = c.client.CoreV1().Pods(c.ns).UpdateStatus(bg, &pod, metav1.UpdateOptions{})
}

// readyAll marks every pod of app ready; it returns how many it marked.
func (c *cluster) readyAll(app string) int {
	n := 0
	for _, p := range c.pods(app) {
		if !controller.PodReady(&p) && p.DeletionTimestamp == nil {
			c.kubeletReady(p, time.Now())
			n++
		}
	}
	return n
}

// kubelet keeps marking new pods of app ready until the test ends.
func (c *cluster) kubelet(app string) {
	ctx, cancel := context.WithCancel(bg)
	done := make(chan struct{})
	c.t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			list, err := c.client.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
			if err == nil {
				for _, p := range list.Items {
					if !controller.PodReady(&p) && p.DeletionTimestamp == nil {
						c.kubeletReady(p, time.Now())
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
}

func condition(d *appsv1.Deployment, t appsv1.DeploymentConditionType) appsv1.DeploymentCondition {
	for _, c := range d.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return appsv1.DeploymentCondition{}
}

// complete: the rollout is done as `kubectl rollout status` judges it.
func complete(d *appsv1.Deployment) bool {
	return d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == *d.Spec.Replicas &&
		d.Status.Replicas == *d.Spec.Replicas && d.Status.AvailableReplicas == *d.Spec.Replicas &&
		condition(d, appsv1.DeploymentProgressing).Reason == reasonNewRSAvailable
}

// events returns "Type Reason Message" of the events about the object.
func (c *cluster) events(kind, name string) []string {
	c.t.Helper()
	return envtest.Events(c.t, c.client, c.ns, kind, name)
}

// dump logs the state of app's Deployment, ReplicaSets and pods.
func (c *cluster) dump(app string) {
	c.t.Helper()
	if d, err := c.client.AppsV1().Deployments(c.ns).Get(bg, app, metav1.GetOptions{}); err == nil {
		c.t.Logf("deployment gen %d annotations %v spec.replicas %d paused %v status %+v", d.Generation, d.Annotations, *d.Spec.Replicas, d.Spec.Paused, d.Status)
	}
	for _, rs := range c.replicaSets(app) {
		c.t.Logf("rs %s gen %d spec %d annotations %v status %+v", rs.Name, rs.Generation, *rs.Spec.Replicas, rs.Annotations, rs.Status)
	}
	for _, p := range c.pods(app) {
		c.t.Logf("pod %s ready %v deleting %v", p.Name, controller.PodReady(&p), p.DeletionTimestamp != nil)
	}
}

// eventually is envtest.Eventually with a dump of app's state on failure.
func (c *cluster) eventually(app, what string, cond func() (bool, error)) {
	c.t.Helper()
	if err := envtest.Wait(cond); err != nil {
		c.dump(app)
		c.t.Fatalf("waiting for %s: %v", what, err)
	}
}
