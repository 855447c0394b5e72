package simnode_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"orch/internal/envtest"
	"orch/internal/simnode"
)

func TestSimulatedNodeRunsPods(t *testing.T) {
	srv := envtest.Start(t)
	client := kubernetes.NewForConfigOrDie(srv.Config)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, ns := range []string{"sim", corev1.NamespaceNodeLease} {
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	sim := simnode.New(client, slog.New(slog.NewTextHandler(io.Discard, nil)))
	sim.LeaseInterval = 100 * time.Millisecond
	if err := sim.Add(ctx, simnode.Node{Name: "n1", CPU: "2", Memory: "4Gi", Labels: map[string]string{"zone": "a"}}); err != nil {
		t.Fatal(err)
	}
	// n2's lease is the clock of the heartbeat loop below.
	if err := sim.Add(ctx, simnode.Node{Name: "n2", CPU: "1", Memory: "1Gi"}); err != nil {
		t.Fatal(err)
	}
	go sim.Start(ctx)

	node, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil || node.Status.Allocatable.Cpu().String() != "2" || node.Labels["zone"] != "a" || node.Status.Conditions[0].Status != corev1.ConditionTrue {
		t.Fatalf("node = %+v, %v", node, err)
	}
	lease, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := lease.Spec.RenewTime.Time
	envtest.EventuallyTrue(t, "the lease to be renewed", func() bool {
		l, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "n1", metav1.GetOptions{})
		return err == nil && l.Spec.RenewTime.After(first)
	})

	pods := client.CoreV1().Pods("sim")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.EventuallyTrue(t, "the pod to run and be ready", func() bool {
		p, err := pods.Get(ctx, "p", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready
	})
	patch := []byte(`{"metadata":{"annotations":{"` + simnode.FinishAnnotation + `":"Failed"}}}`)
	if _, err := pods.Patch(ctx, "p", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.EventuallyTrue(t, "the pod to fail", func() bool {
		p, err := pods.Get(ctx, "p", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodFailed && p.Status.ContainerStatuses[0].State.Terminated.ExitCode == 1
	})

	// A running pod deleted gracefully is removed by the simulated kubelet.
	if _, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: pod.Spec}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.EventuallyTrue(t, "q to run", func() bool {
		p, err := pods.Get(ctx, "q", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning
	})
	if err := pods.Delete(ctx, "q", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.EventuallyTrue(t, "q to be gone", func() bool {
		_, err := pods.Get(ctx, "q", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})

	// Without heartbeats the lease stops moving. The loop renews every
	// node's lease once a round, one round after the other: two renewals of
	// n2's lease mean a whole round began after StopHeartbeat (so one that
	// began before has ended); two more, that a whole round ran since.
	renewTime := func(node string) metav1.MicroTime {
		l, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return *l.Spec.RenewTime
	}
	rounds := func(n int) {
		last := renewTime("n2")
		for i := range n {
			envtest.EventuallyTrue(t, fmt.Sprintf("renewal %d of n2's lease", i+1), func() bool {
				now := renewTime("n2")
				changed := !now.Equal(&last)
				last = now
				return changed
			})
		}
	}
	sim.StopHeartbeat("n1")
	rounds(2)
	before := renewTime("n1")
	rounds(2)
	if after := renewTime("n1"); !after.Equal(&before) {
		t.Errorf("the lease was renewed after StopHeartbeat: %v, then %v", before, after)
	}
}
