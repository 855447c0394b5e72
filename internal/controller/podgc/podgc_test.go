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
	mk := func(name, node string, phase corev1.PodPhase) {
		p, err := client.CoreV1().Pods("gc").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Status.Phase = phase
		if _, err := client.CoreV1().Pods("gc").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond) // distinct creation timestamps (second resolution)
	}
	for i := 0; i < 4; i++ {
		mk(fmt.Sprintf("done-%d", i), "alive", corev1.PodSucceeded)
	}
	mk("running", "alive", corev1.PodRunning)
	mk("orphan", "gone", corev1.PodRunning)
	env.Start(t, c)
	exists := func(name string) bool {
		_, err := client.CoreV1().Pods("gc").Get(ctx, name, metav1.GetOptions{})
		return !apierrors.IsNotFound(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for exists("done-0") || exists("done-1") {
		if time.Now().After(deadline) {
			t.Fatal("the two oldest finished pods were not collected")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !exists("done-2") || !exists("done-3") || !exists("running") {
		t.Fatal("collected more than the finished pods over the threshold")
	}
	if !exists("orphan") {
		t.Fatal("the orphan was deleted before its node had been missing for 40 s")
	}
	// Two gc periods of fake time later the node has been gone long enough.
	for i := 0; i < 3; i++ {
		clock.Step(21 * time.Second)
		time.Sleep(100 * time.Millisecond)
	}
	deadline = time.Now().Add(20 * time.Second)
	for exists("orphan") {
		if time.Now().After(deadline) {
			t.Fatal("the pod on a missing node was not collected")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
