package prober_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"orch/internal/kubelet/prober"
)

// healthyRuntime answers every exec probe with exit code 0.
type healthyRuntime struct{}

func (healthyRuntime) ExecSync(context.Context, string, []string, time.Duration) ([]byte, []byte, int32, error) {
	return []byte("ok"), nil, 0, nil
}

func Example() {
	changed := make(chan types.UID, 1)
	m := prober.NewManager(healthyRuntime{}, record.NewFakeRecorder(10), func(uid types.UID) { changed <- uid }, nil)
	defer m.Close()

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "1234"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app",
			ReadinessProbe: &corev1.Probe{
				ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/ready"}}},
				PeriodSeconds: 1,
			},
		}}},
	}
	// On every sync of the pod: the running containers, by name.
	m.Sync(pod, "10.42.0.7", map[string]prober.Running{"app": {ID: "c1", StartedAt: time.Now()}})
	fmt.Println("ready:", m.Ready("c1"), "started:", m.Started("c1"))

	uid := <-changed // a result changed: sync the pod again
	fmt.Println("changed:", uid, "ready:", m.Ready("c1"), "liveness failed:", m.LivenessFailed("c1"))

	m.Remove(pod.UID) // the pod is gone
	// Output:
	// ready: false started: true
	// changed: 1234 ready: true liveness failed: false
}
