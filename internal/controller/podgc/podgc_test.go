package podgc_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"orch/internal/controller/controllertest"
	"orch/internal/controller/podgc"
	"orch/internal/envtest"
)

func TestPodGC(t *testing.T) {
	env := controllertest.New(t, "gc")
	clock := clocktesting.NewFakeClock(time.Now())
	env.Context.Clock = clock
	c := podgc.New(env.Context)
	c.Threshold = 2
	client := env.Context.Client
	ctx := t.Context()
	if _, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "alive"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mk := func(name, node string, phase corev1.PodPhase) *corev1.Pod {
		p, err := client.CoreV1().Pods("gc").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Status.Phase = phase
		if _, err := client.CoreV1().Pods("gc").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// The finished pods' creation timestamps (whole seconds) must differ:
	// the next is made once the apiserver's clock (this process's) has
	// passed the second of the last.
	for i := 0; i < 4; i++ {
		p := mk(fmt.Sprintf("done-%d", i), "alive", corev1.PodSucceeded)
		envtest.EventuallyTrue(t, "the second after "+p.Name+"'s creation", func() bool {
			return time.Now().Truncate(time.Second).After(p.CreationTimestamp.Time)
		})
	}
	mk("running", "alive", corev1.PodRunning)
	mk("orphan", "gone", corev1.PodRunning)
	env.Start(t, c)
	exists := func(name string) bool {
		_, err := client.CoreV1().Pods("gc").Get(ctx, name, metav1.GetOptions{})
		return !apierrors.IsNotFound(err)
	}
	envtest.EventuallyTrue(t, "the two oldest finished pods to be collected", func() bool {
		return !exists("done-0") && !exists("done-1")
	})
	if !exists("done-2") || !exists("done-3") || !exists("running") {
		t.Fatal("collected more than the finished pods over the threshold")
	}
	if !exists("orphan") {
		t.Fatal("the orphan was deleted before its node had been missing for 40 s")
	}
	// Once the node has been gone long enough in fake time, a collection
	// deletes the orphan (each step makes the next collection due).
	envtest.EventuallyTrue(t, "the pod on a missing node to be collected", func() bool {
		clock.Step(21 * time.Second)
		return !exists("orphan")
	})
}
