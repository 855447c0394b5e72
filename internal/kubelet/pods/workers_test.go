package pods

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/envtest"
	"orch/internal/kubelet/cri"
	"orch/internal/kubelet/podconfig"
)

func apiPod(name string, policy corev1.RestartPolicy, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "work"},
		Spec: corev1.PodSpec{NodeName: node, RestartPolicy: policy,
			Containers: []corev1.Container{{Name: "main", Image: "busybox", Command: []string{"sh", "-c", "echo hi"}}}},
	}
}

func TestWorkersAgainstAPIServer(t *testing.T) {
	env := envtest.New(t, "work")
	client := env.Client
	rt := cri.NewFake()
	w := New(client, podconfig.Node{Name: "node-1", HostIPs: []string{"10.0.0.1"}}, rt, quiet)
	w.LogRoot, w.RootDir, w.Relist = t.TempDir(), t.TempDir(), 100*time.Millisecond
	env.Start(t, w)
	ctx := context.Background()
	pods := client.CoreV1().Pods("work")

	for _, p := range []*corev1.Pod{
		apiPod("once", corev1.RestartPolicyNever, "node-1"),
		apiPod("always", corev1.RestartPolicyAlways, "node-1"),
		apiPod("elsewhere", corev1.RestartPolicyAlways, "node-2"),
	} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var containerID string
	envtest.Eventually(t, "pod once running", func() (bool, error) {
		p, err := pods.Get(ctx, "once", metav1.GetOptions{})
		if err != nil || p.Status.Phase != corev1.PodRunning {
			return false, err
		}
		cs := p.Status.ContainerStatuses
		if len(cs) != 1 || cs[0].State.Running == nil || !cs[0].Ready || p.Status.HostIP != "10.0.0.1" {
			return false, nil
		}
		containerID = strings.TrimPrefix(cs[0].ContainerID, "containerd://")
		return containerID != cs[0].ContainerID, nil
	})
	if c := findCondition(mustGet(t, pods, "once").Status.Conditions, corev1.PodReady); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("Ready condition %+v", c)
	}

	if err := rt.Exit(containerID, 0, ""); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "pod once succeeded", func() (bool, error) {
		p, err := pods.Get(ctx, "once", metav1.GetOptions{})
		if err != nil || p.Status.Phase != corev1.PodSucceeded {
			return false, err
		}
		term := p.Status.ContainerStatuses[0].State.Terminated
		return term != nil && term.ExitCode == 0 && term.Reason == "Completed", nil
	})

	envtest.Eventually(t, "pod always running", func() (bool, error) {
		p, err := pods.Get(ctx, "always", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, err
	})
	stopsBefore := countCalls(rt, "StopContainer")
	if err := pods.Delete(ctx, "always", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "pod always gone", func() (bool, error) {
		_, err := pods.Get(ctx, "always", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if countCalls(rt, "StopContainer") != stopsBefore+1 {
		t.Errorf("StopContainer calls: %v", rt.Calls())
	}
	sandboxes, err := rt.ListPodSandbox(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range sandboxes {
		if sb.Metadata.Name != "once" {
			t.Errorf("sandbox of %s left", sb.Metadata.Name)
		}
	}
	if p := mustGet(t, pods, "elsewhere"); p.Status.Phase != corev1.PodPending || len(p.Status.ContainerStatuses) != 0 {
		t.Errorf("pod of another node was touched: %+v", p.Status)
	}

	envtest.Eventually(t, "the events", func() (bool, error) {
		ev := envtest.Events(t, client, "work", "Pod", "always")
		for _, prefix := range []string{"Normal Pulled", "Normal Created", "Normal Started", "Normal Killing"} {
			if envtest.CountPrefix(ev, prefix) == 0 {
				return false, nil
			}
		}
		return true, nil
	})
	ev := envtest.Events(t, client, "work", "Pod", "once")
	if envtest.CountPrefix(ev, "Normal Pulling") == 0 && envtest.CountPrefix(ev, "Normal Pulled") == 0 {
		t.Errorf("events of once: %q", ev)
	}
}

func mustGet(t *testing.T, pods interface {
	Get(context.Context, string, metav1.GetOptions) (*corev1.Pod, error)
}, name string) *corev1.Pod {
	t.Helper()
	p, err := pods.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func countCalls(rt *cri.Fake, method string) int {
	n := 0
	for _, c := range rt.Calls() {
		if strings.HasPrefix(c, method+" ") {
			n++
		}
	}
	return n
}
