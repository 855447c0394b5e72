package replicaset

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"orch/internal/envtest"
)

// A create that fails (here: a quota) is tried once per sync, not once per
// missing replica; it is reported as a FailedCreate event and as the
// ReplicaFailure condition, which clears once creates succeed.
func TestFailedCreateSlowStart(t *testing.T) {
	rs := newRS("web", 5, map[string]string{"app": "web"})
	rs.UID = "rs-uid"
	client := fake.NewClientset(rs)
	var attempts, failing atomic.Int32
	failing.Store(1)
	client.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		attempts.Add(1)
		if failing.Load() == 1 {
			return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "", errString("exceeded quota: q"))
		}
		// The fake clientset does not generate names.
		pod := action.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		pod.Name = fmt.Sprintf("%s%d", pod.GenerateName, attempts.Load())
		return false, nil, nil
	})
	recorder := record.NewFakeRecorder(100)
	run(t, client, clock.RealClock{}, func(string) record.EventRecorder { return recorder })

	envtest.Eventually(t, "ReplicaFailure condition", func() (bool, error) {
		got, err := client.AppsV1().ReplicaSets("default").Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := replicaFailure(got.Status)
		return c != nil && c.Reason == "FailedCreate" && strings.Contains(c.Message, "exceeded quota"), nil
	})
	// The first sync made one attempt; retries come with backoff, each
	// again a batch of one.
	if n := attempts.Load(); n > 3 {
		t.Fatalf("%d create attempts: slow start should try one pod per sync", n)
	}
	select {
	case e := <-recorder.Events:
		if !strings.HasPrefix(e, "Warning FailedCreate Error creating: ") {
			t.Fatalf("event %q", e)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no FailedCreate event")
	}

	failing.Store(0)
	envtest.Eventually(t, "5 pods and the condition cleared", func() (bool, error) {
		got, err := client.AppsV1().ReplicaSets("default").Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return got.Status.Replicas == 5 && replicaFailure(got.Status) == nil, nil
	})
	pods, _ := client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
	if len(pods.Items) != 5 {
		t.Fatalf("%d pods, want 5", len(pods.Items))
	}
}

type errString string

func (e errString) Error() string { return string(e) }
