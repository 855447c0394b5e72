// Package jobs is the registry entry for batch/v1 jobs. It also holds the job
// spec checks the cronjobs entry applies to its job template.
package jobs

import (
	"fmt"
	"maps"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/podspec"
	"orch/internal/apiserver/registry/workloadutil"
)

// The unprefixed labels the job controller has always put on its pods, next
// to batchv1.JobNameLabel and batchv1.ControllerUidLabel.
const (
	LegacyJobNameLabel       = "job-name"
	LegacyControllerUIDLabel = "controller-uid"
)

// Resource returns the jobs entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:     batchv1.SchemeGroupVersion,
		Resource:         "jobs",
		Kind:             "Job",
		SingularName:     "job",
		Namespaced:       true,
		Categories:       []string{"all"},
		New:              func() runtime.Object { return &batchv1.Job{} },
		NewList:          func() runtime.Object { return &batchv1.JobList{} },
		HasStatus:        true,
		Default:          setDefaults,
		PrepareForCreate: prepareForCreate,
		PrepareForUpdate: prepareForUpdate,
		Validate:         validate,
		ValidateUpdate:   validateUpdate,
		Columns:          columns(),
		Row:              row,
		SelectableFields: func(obj runtime.Object) fields.Set {
			return fields.Set{"status.successful": strconv.Itoa(int(obj.(*batchv1.Job).Status.Succeeded))}
		},
	}
}

// setDefaults applies upstream's batch/v1 job defaults. The pod template's
// restartPolicy is defaulted like any pod's (to Always), which validation
// then rejects as upstream does: a job must say OnFailure or Never.
func setDefaults(obj runtime.Object) {
	job := obj.(*batchv1.Job)
	spec := &job.Spec
	if spec.Completions == nil && spec.Parallelism == nil {
		spec.Completions = int32p(1)
	}
	if spec.Parallelism == nil {
		spec.Parallelism = int32p(1)
	}
	if spec.BackoffLimit == nil {
		if spec.BackoffLimitPerIndex != nil {
			spec.BackoffLimit = int32p(1<<31 - 1)
		} else {
			spec.BackoffLimit = int32p(6)
		}
	}
	if len(job.Labels) == 0 && spec.Template.Labels != nil {
		job.Labels = maps.Clone(spec.Template.Labels)
	}
	if spec.CompletionMode == nil {
		mode := batchv1.NonIndexedCompletion
		spec.CompletionMode = &mode
	}
	if spec.Suspend == nil {
		suspend := false
		spec.Suspend = &suspend
	}
	if spec.PodReplacementPolicy == nil {
		policy := batchv1.TerminatingOrFailed
		if spec.PodFailurePolicy != nil {
			policy = batchv1.Failed
		}
		spec.PodReplacementPolicy = &policy
	}
	if spec.ManualSelector == nil {
		manual := false
		spec.ManualSelector = &manual
	}
	DefaultTemplate(spec)
}

// DefaultTemplate applies the defaults shared with cron job templates: the
// pod template's and the status of pod condition patterns (True).
func DefaultTemplate(spec *batchv1.JobSpec) {
	if spec.PodFailurePolicy != nil {
		for i := range spec.PodFailurePolicy.Rules {
			for j := range spec.PodFailurePolicy.Rules[i].OnPodConditions {
				if c := &spec.PodFailurePolicy.Rules[i].OnPodConditions[j]; c.Status == "" {
					c.Status = corev1.ConditionTrue
				}
			}
		}
	}
	podspec.DefaultPodTemplateSpec(&spec.Template)
}

func int32p(v int32) *int32 { return &v }

// prepareForCreate resets the status, drops alpha-only fields and, unless
// the job asks for a manual selector, generates the selector and pod labels
// from the job's UID (set by the handler before this runs).
func prepareForCreate(obj runtime.Object) {
	job := obj.(*batchv1.Job)
	job.Status = batchv1.JobStatus{}
	job.Spec.Scheduling = nil // alpha (workload scheduling), off as upstream defaults it
	if job.Spec.ManualSelector != nil && *job.Spec.ManualSelector {
		return
	}
	before := maps.Clone(job.Spec.Template.Labels)
	generateSelector(job)
	// Upstream's job labels default to the template's labels, and show the
	// generated ones too.
	if len(job.Labels) == 0 || maps.Equal(job.Labels, before) {
		job.Labels = maps.Clone(job.Spec.Template.Labels)
	}
}

// generateSelector selects the job's pods by its UID and labels the pod
// template accordingly; labels the user set are kept, so a conflict shows up
// in validation.
func generateSelector(job *batchv1.Job) {
	t := &job.Spec.Template
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	for key, value := range map[string]string{
		LegacyJobNameLabel: job.Name, batchv1.JobNameLabel: job.Name,
		LegacyControllerUIDLabel: string(job.UID), batchv1.ControllerUidLabel: string(job.UID),
	} {
		if _, set := t.Labels[key]; !set {
			t.Labels[key] = value
		}
	}
	if job.Spec.Selector == nil {
		job.Spec.Selector = &metav1.LabelSelector{}
	}
	if job.Spec.Selector.MatchLabels == nil {
		job.Spec.Selector.MatchLabels = map[string]string{}
	}
	if _, set := job.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel]; !set {
		job.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel] = string(job.UID)
	}
}

func prepareForUpdate(obj, old runtime.Object) {
	job, oldJob := obj.(*batchv1.Job), old.(*batchv1.Job)
	if oldJob.Spec.Scheduling == nil {
		job.Spec.Scheduling = nil
	}
}

func columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
		{Name: "Status", Type: "string", Description: "Status of the job."},
		{Name: "Completions", Type: "string", Description: batchv1.JobStatus{}.SwaggerDoc()["succeeded"]},
		{Name: "Duration", Type: "string", Description: "Time required to complete the job."},
		{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template."},
		{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template."},
		{Name: "Selector", Type: "string", Priority: 1, Description: batchv1.JobSpec{}.SwaggerDoc()["selector"]},
	}
}

func row(obj runtime.Object, now time.Time) []interface{} {
	job := obj.(*batchv1.Job)
	var completions string
	switch {
	case job.Spec.Completions != nil:
		completions = fmt.Sprintf("%d/%d", job.Status.Succeeded, *job.Spec.Completions)
	case job.Spec.Parallelism != nil && *job.Spec.Parallelism > 1:
		completions = fmt.Sprintf("%d/1 of %d", job.Status.Succeeded, *job.Spec.Parallelism)
	default:
		completions = fmt.Sprintf("%d/1", job.Status.Succeeded)
	}
	var took string
	switch start, end := job.Status.StartTime, job.Status.CompletionTime; {
	case start == nil:
	case end == nil:
		took = duration.HumanDuration(now.Sub(start.Time))
	default:
		took = duration.HumanDuration(end.Sub(start.Time))
	}
	names, images := workloadutil.ContainerCells(job.Spec.Template.Spec.Containers)
	return []interface{}{job.Name, Status(job), completions, took, registry.Age(job.CreationTimestamp, now),
		names, images, metav1.FormatLabelSelector(job.Spec.Selector)}
}

// Status is the STATUS column of a job: Complete, Failed, Terminating,
// Suspended, FailureTarget or Running.
func Status(job *batchv1.Job) string {
	switch {
	case hasCondition(job, batchv1.JobComplete):
		return "Complete"
	case hasCondition(job, batchv1.JobFailed):
		return "Failed"
	case job.DeletionTimestamp != nil:
		return "Terminating"
	case hasCondition(job, batchv1.JobSuspended):
		return "Suspended"
	case hasCondition(job, batchv1.JobFailureTarget):
		return "FailureTarget"
	}
	return "Running"
}

// hasCondition reports whether the first condition of type t is true.
func hasCondition(job *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
