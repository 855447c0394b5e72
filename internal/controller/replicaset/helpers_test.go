package replicaset

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"orch/internal/controller"
)

// testLog discards logs unless ORCH_TEST_LOG is set.
func testLog() *slog.Logger {
	if os.Getenv("ORCH_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// run builds the controller on client with clk, starts the informers and
// the controller, and stops everything when the test ends.
func run(t *testing.T, client kubernetes.Interface, clk clock.WithTicker, recorder func(string) record.EventRecorder) *Controller {
	t.Helper()
	factory := informers.NewSharedInformerFactory(client, 0)
	if recorder == nil {
		b := record.NewBroadcaster()
		b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
		t.Cleanup(b.Shutdown)
		recorder = func(component string) record.EventRecorder {
			return b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
		}
	}
	c := New(controller.Context{Client: client, Informers: factory, Recorder: recorder, Log: testLog(), Clock: clk})
	ctx, cancel := context.WithCancel(context.Background())
	factory.StartWithContext(ctx)
	done := make(chan error)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
		factory.Shutdown()
	})
	return c
}

func newRS(name string, replicas int32, labels map[string]string) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
}

func newPod(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
}

// readyStatus is what a kubelet reports for a running, ready pod.
func readyStatus(since time.Time) corev1.PodStatus {
	t := metav1.NewTime(since)
	return corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: t},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: t},
		},
	}
}
