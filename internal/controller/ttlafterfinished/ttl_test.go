package ttlafterfinished_test

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"orch/internal/controller/controllertest"
	"orch/internal/controller/ttlafterfinished"
)

func TestFinishedJobsExpire(t *testing.T) {
	env := controllertest.New(t, "ttl")
	env.Start(t, ttlafterfinished.New(env.Context))
	jobs := env.Context.Client.BatchV1().Jobs("ttl")
	ctx := t.Context()
	mk := func(name string, ttl *int32, finished bool) {
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: batchv1.JobSpec{TTLSecondsAfterFinished: ttl,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "i"}}}}}}
		created, err := jobs.Create(ctx, job, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if finished {
			now := metav1.Now()
			created.Status.StartTime, created.Status.CompletionTime = &now, &now
			created.Status.Succeeded = 1
			created.Status.Conditions = []batchv1.JobCondition{
				{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now}}
			if _, err := jobs.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	mk("expires", ptr.To[int32](1), true)
	mk("running", ptr.To[int32](0), false)
	mk("no-ttl", nil, true)
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := jobs.Get(ctx, "expires", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if err == nil {
			if j, _ := jobs.Get(ctx, "expires", metav1.GetOptions{}); j != nil && j.DeletionTimestamp != nil {
				break // foreground deletion waits for the garbage collector
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the finished job with a 1 s TTL was not deleted")
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, name := range []string{"running", "no-ttl"} {
		if j, err := jobs.Get(ctx, name, metav1.GetOptions{}); err != nil || j.DeletionTimestamp != nil {
			t.Errorf("%s was deleted: %v", name, err)
		}
	}
}
