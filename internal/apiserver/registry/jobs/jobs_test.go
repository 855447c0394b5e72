package jobs

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

const uid = types.UID("0e7c-41d2")

// job returns a job as a client sends it: no selector, restartPolicy Never.
func job() *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "default"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "pi", Image: "perl"}},
		}}},
	}
}

// create runs what the handler runs on create: uid, defaults, prepare.
func create(j *batchv1.Job) *batchv1.Job {
	r := Resource()
	j.UID = uid
	r.Default(j)
	r.PrepareForCreate(j)
	return j
}

func TestDefault(t *testing.T) {
	j := job()
	Resource().Default(j)
	s := j.Spec
	if *s.Completions != 1 || *s.Parallelism != 1 || *s.BackoffLimit != 6 || *s.CompletionMode != batchv1.NonIndexedCompletion ||
		*s.Suspend || *s.ManualSelector || *s.PodReplacementPolicy != batchv1.TerminatingOrFailed {
		t.Errorf("defaults: %+v", s)
	}
	if s.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy changed to %s", s.Template.Spec.RestartPolicy)
	}

	parallel := job()
	parallel.Spec.Parallelism = ptr.To[int32](3)
	parallel.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
	parallel.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
		Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}},
	}}}
	Resource().Default(parallel)
	if parallel.Spec.Completions != nil || *parallel.Spec.BackoffLimit != 1<<31-1 || *parallel.Spec.PodReplacementPolicy != batchv1.Failed {
		t.Errorf("parallel defaults: %+v", parallel.Spec)
	}
	if parallel.Spec.PodFailurePolicy.Rules[0].OnPodConditions[0].Status != corev1.ConditionTrue {
		t.Error("pod condition pattern status not defaulted")
	}
}

func TestPrepareForCreate(t *testing.T) {
	j := create(job())
	want := map[string]string{
		"batch.kubernetes.io/controller-uid": string(uid), "batch.kubernetes.io/job-name": "pi",
		"controller-uid": string(uid), "job-name": "pi",
	}
	for k, v := range want {
		if j.Spec.Template.Labels[k] != v || j.Labels[k] != v {
			t.Errorf("label %s: template %q, job %q, want %q", k, j.Spec.Template.Labels[k], j.Labels[k], v)
		}
	}
	if len(j.Spec.Selector.MatchLabels) != 1 || j.Spec.Selector.MatchLabels["batch.kubernetes.io/controller-uid"] != string(uid) {
		t.Errorf("selector = %v", j.Spec.Selector)
	}
	registrytest.ExpectErrors(t, Resource().Validate(j))

	labeled := job()
	labeled.Labels = map[string]string{"team": "a"}
	create(labeled)
	if len(labeled.Labels) != 1 {
		t.Errorf("job labels the user set were changed: %v", labeled.Labels)
	}

	manual := job()
	manual.Spec.ManualSelector = ptr.To(true)
	manual.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pi"}}
	manual.Spec.Template.Labels = map[string]string{"app": "pi"}
	create(manual)
	if len(manual.Spec.Template.Labels) != 1 {
		t.Errorf("manual selector got generated labels: %v", manual.Spec.Template.Labels)
	}
	registrytest.ExpectErrors(t, Resource().Validate(manual))
}

func TestValidate(t *testing.T) {
	r := Resource()
	tests := []struct {
		name   string
		change func(*batchv1.Job)
		want   []string
	}{
		{"restart always", func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways }, []string{"FieldValueRequired spec.template.spec.restartPolicy"}},
		{"negative backoff", func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr.To[int32](-1) }, []string{"FieldValueInvalid spec.backoffLimit"}},
		{"wrong uid label", func(j *batchv1.Job) { j.Spec.Template.Labels["controller-uid"] = "other" }, []string{"FieldValueInvalid spec.template.metadata.labels[controller-uid]"}},
		{"indexed without completions", func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
			j.Spec.Completions = nil
		}, []string{"FieldValueRequired spec.completions"}},
		{"per-index limit needs indexed", func(j *batchv1.Job) { j.Spec.BackoffLimitPerIndex = ptr.To[int32](1) }, []string{"FieldValueInvalid spec.backoffLimitPerIndex"}},
		{"failure policy needs Never", func(j *batchv1.Job) {
			j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
			j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: "In", Values: []int32{1, 2}},
			}}}
		}, []string{"FieldValueInvalid spec.template.spec.restartPolicy"}},
		{"bad exit codes", func(j *batchv1.Job) {
			j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: "In", Values: []int32{3, 0, 3}},
			}}}
		}, []string{"FieldValueInvalid spec.podFailurePolicy.rules[0].onExitCodes.values[1]", "FieldValueDuplicate spec.podFailurePolicy.rules[0].onExitCodes.values[2]",
			"FieldValueInvalid spec.podFailurePolicy.rules[0].onExitCodes.values"}},
		{"success policy needs indexed", func(j *batchv1.Job) {
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededCount: ptr.To[int32](1)}}}
		}, []string{"FieldValueInvalid spec.successPolicy"}},
		{"success policy indexes", func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
			j.Spec.Completions = ptr.To[int32](5)
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0,2-4"), SucceededCount: ptr.To[int32](4)}}}
		}, nil},
		{"success policy bad indexes", func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
			j.Spec.Completions = ptr.To[int32](5)
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("3,1")}}}
		}, []string{"FieldValueInvalid spec.successPolicy.rules[0].succeededIndexes"}},
		{"indexed name too long for pods", func(j *batchv1.Job) {
			j.Name = "a-very-long-job-name-that-fills-most-of-the-sixty-three-chars-x"
			j.Spec.Template.Labels["job-name"], j.Spec.Template.Labels["batch.kubernetes.io/job-name"] = j.Name, j.Name
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
			j.Spec.Completions = ptr.To[int32](10)
		}, []string{"FieldValueInvalid metadata.name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := create(job())
			tt.change(j)
			registrytest.ExpectErrors(t, r.Validate(j), tt.want...)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	r := Resource()
	old := create(job())

	same := old.DeepCopy()
	same.Spec.ActiveDeadlineSeconds = ptr.To[int64](60)
	registrytest.ExpectErrors(t, registrytest.Validate(r, same, old))

	changed := old.DeepCopy()
	changed.Spec.Template.Spec.Containers[0].Image = "perl:5"
	changed.Spec.Completions = ptr.To[int32](2)
	errs := registrytest.Validate(r, changed, old)
	registrytest.ExpectErrors(t, errs, "FieldValueInvalid spec.completions", "FieldValueInvalid spec.template")

	// A suspended job that never ran may move its pods elsewhere.
	suspended := old.DeepCopy()
	suspended.Spec.Suspend = ptr.To(true)
	moved := suspended.DeepCopy()
	moved.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "b"}
	registrytest.ExpectErrors(t, registrytest.Validate(r, moved, suspended))
	started := suspended.DeepCopy()
	started.Status.StartTime = &metav1.Time{Time: time.Now()}
	registrytest.ExpectErrors(t, registrytest.Validate(r, moved, started), "FieldValueInvalid spec.template")

	// Indexed jobs scale by changing completions and parallelism together.
	indexed := job()
	indexed.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	indexed.Spec.Completions, indexed.Spec.Parallelism = ptr.To[int32](2), ptr.To[int32](2)
	create(indexed)
	scaled := indexed.DeepCopy()
	scaled.Spec.Completions, scaled.Spec.Parallelism = ptr.To[int32](4), ptr.To[int32](4)
	registrytest.ExpectErrors(t, registrytest.Validate(r, scaled, indexed))
	scaled.Spec.Parallelism = ptr.To[int32](3)
	registrytest.ExpectErrors(t, registrytest.Validate(r, scaled, indexed), "FieldValueInvalid spec.completions")
}

func TestRowAndFields(t *testing.T) {
	r := Resource()
	if !r.HasStatus || r.Categories[0] != "all" {
		t.Fatalf("resource = %+v", r)
	}
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	j := create(job())
	j.CreationTimestamp = metav1.NewTime(now.Add(-10 * time.Minute))
	j.Status = batchv1.JobStatus{
		Succeeded: 1, StartTime: &metav1.Time{Time: now.Add(-10 * time.Minute)}, CompletionTime: &metav1.Time{Time: now.Add(-9*time.Minute - 30*time.Second)},
		Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}},
	}
	row := r.Row(j, now)
	registrytest.CheckTable(t, r, row)
	want := []interface{}{"pi", "Complete", "1/1", "30s", "10m", "pi", "perl", "batch.kubernetes.io/controller-uid=" + string(uid)}
	for i := range want {
		if row[i] != want[i] {
			t.Errorf("cell %d (%s) = %#v, want %#v", i, r.Columns[i].Name, row[i], want[i])
		}
	}
	if f := r.SelectableFields(j); f["status.successful"] != "1" {
		t.Errorf("fields = %v", f)
	}

	running := job()
	running.Spec.Parallelism = ptr.To[int32](3)
	running.Status.StartTime = &metav1.Time{Time: now.Add(-2 * time.Minute)}
	row = r.Row(running, now)
	if row[1] != "Running" || row[2] != "0/1 of 3" || row[3] != "2m" {
		t.Errorf("running row = %v", row)
	}
	running.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobSuspended, Status: corev1.ConditionTrue}}
	if got := Status(running); got != "Suspended" {
		t.Errorf("status = %s", got)
	}
}
