// Package cronjobs is the registry entry for batch/v1 cronjobs.
package cronjobs

import (
	"regexp"
	"strings"
	"time"
	_ "time/tzdata" // time zones must resolve on hosts without /usr/share/zoneinfo

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/jobs"
	"orch/internal/apiserver/registry/workloadutil"
)

// maxNameLength leaves room for the 11-character suffix the controller adds
// to name each job (the job name is a 63-character label).
const maxNameLength = 52

var (
	concurrencyPolicies = []string{string(batchv1.AllowConcurrent), string(batchv1.ForbidConcurrent), string(batchv1.ReplaceConcurrent)}
	// timeZonePart is what one "/"-separated part of an IANA zone name may hold.
	timeZonePart = regexp.MustCompile(`^[A-Za-z\.\-_0-9+]{1,14}$`)
)

// Resource returns the cronjobs entry.
func Resource() registry.Resource {
	spec := batchv1.CronJobSpec{}.SwaggerDoc()
	return registry.Resource{
		GroupVersion: batchv1.SchemeGroupVersion,
		Resource:     "cronjobs",
		Kind:         "CronJob",
		SingularName: "cronjob",
		Namespaced:   true,
		ShortNames:   []string{"cj"},
		Categories:   []string{"all"},
		New:          func() runtime.Object { return &batchv1.CronJob{} },
		NewList:      func() runtime.Object { return &batchv1.CronJobList{} },
		HasStatus:    true,
		Default:      setDefaults,
		PrepareForCreate: func(obj runtime.Object) {
			obj.(*batchv1.CronJob).Status = batchv1.CronJobStatus{}
		},
		Validate: validate,
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "Schedule", Type: "string", Description: spec["schedule"]},
			{Name: "Timezone", Type: "string", Description: spec["timeZone"]},
			{Name: "Suspend", Type: "boolean", Description: spec["suspend"]},
			{Name: "Active", Type: "integer", Description: batchv1.CronJobStatus{}.SwaggerDoc()["active"]},
			{Name: "Last Schedule", Type: "string", Description: batchv1.CronJobStatus{}.SwaggerDoc()["lastScheduleTime"]},
			{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
			{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template."},
			{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template."},
			{Name: "Selector", Type: "string", Priority: 1, Description: batchv1.JobSpec{}.SwaggerDoc()["selector"]},
		},
		Row: row,
	}
}

// setDefaults applies upstream's defaults: concurrency Allow, not suspended,
// 3 successful and 1 failed jobs kept. The job template gets only its pod
// template's defaults, as upstream.
func setDefaults(obj runtime.Object) {
	spec := &obj.(*batchv1.CronJob).Spec
	if spec.ConcurrencyPolicy == "" {
		spec.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	if spec.Suspend == nil {
		suspend := false
		spec.Suspend = &suspend
	}
	if spec.SuccessfulJobsHistoryLimit == nil {
		three := int32(3)
		spec.SuccessfulJobsHistoryLimit = &three
	}
	if spec.FailedJobsHistoryLimit == nil {
		one := int32(1)
		spec.FailedJobsHistoryLimit = &one
	}
	jobs.DefaultTemplate(&spec.JobTemplate.Spec)
}

func row(obj runtime.Object, now time.Time) []interface{} {
	cj := obj.(*batchv1.CronJob)
	last := "<none>"
	if cj.Status.LastScheduleTime != nil {
		last = registry.Age(*cj.Status.LastScheduleTime, now)
	}
	zone := "<none>"
	if cj.Spec.TimeZone != nil {
		zone = *cj.Spec.TimeZone
	}
	suspend := "<unset>"
	if cj.Spec.Suspend != nil {
		suspend = map[bool]string{true: "True", false: "False"}[*cj.Spec.Suspend]
	}
	names, images := workloadutil.ContainerCells(cj.Spec.JobTemplate.Spec.Template.Spec.Containers)
	return []interface{}{cj.Name, cj.Spec.Schedule, zone, suspend, int64(len(cj.Status.Active)), last,
		registry.Age(cj.CreationTimestamp, now), names, images, metav1.FormatLabelSelector(cj.Spec.JobTemplate.Spec.Selector)}
}

func validate(obj runtime.Object) field.ErrorList {
	cj := obj.(*batchv1.CronJob)
	errs := validateSpec(&cj.Spec)
	if len(cj.Name) > maxNameLength {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), cj.Name, "must be no more than 52 characters"))
	}
	return errs
}

// validateSpec checks a cron job spec.
func validateSpec(spec *batchv1.CronJobSpec) field.ErrorList {
	p := field.NewPath("spec")
	var errs field.ErrorList
	if spec.Schedule == "" {
		errs = append(errs, field.Required(p.Child("schedule"), ""))
	} else {
		errs = append(errs, validateSchedule(spec.Schedule, p.Child("schedule"))...)
	}
	if d := spec.StartingDeadlineSeconds; d != nil {
		errs = append(errs, workloadutil.NonNegative(*d, p.Child("startingDeadlineSeconds"))...)
	}
	errs = append(errs, validateTimeZone(spec.TimeZone, p.Child("timeZone"))...)
	switch cp := p.Child("concurrencyPolicy"); spec.ConcurrencyPolicy {
	case batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent:
	case "":
		errs = append(errs, field.Required(cp, ""))
	default:
		errs = append(errs, field.NotSupported(cp, spec.ConcurrencyPolicy, concurrencyPolicies))
	}
	tp := p.Child("jobTemplate", "spec")
	errs = append(errs, jobs.ValidateSpec(&spec.JobTemplate.Spec, tp)...)
	if spec.JobTemplate.Spec.Selector != nil {
		errs = append(errs, field.Invalid(tp.Child("selector"), spec.JobTemplate.Spec.Selector, "`selector` will be auto-generated"))
	}
	if m := spec.JobTemplate.Spec.ManualSelector; m != nil && *m {
		errs = append(errs, field.NotSupported(tp.Child("manualSelector"), *m, []string{"nil", "false"}))
	}
	if l := spec.SuccessfulJobsHistoryLimit; l != nil {
		errs = append(errs, workloadutil.NonNegative(int64(*l), p.Child("successfulJobsHistoryLimit"))...)
	}
	if l := spec.FailedJobsHistoryLimit; l != nil {
		errs = append(errs, workloadutil.NonNegative(int64(*l), p.Child("failedJobsHistoryLimit"))...)
	}
	return errs
}

// validateSchedule checks the cron syntax; a time zone belongs in the
// timeZone field, not in the schedule (upstream still accepts it in cron
// jobs stored before that rule, which this server never had).
func validateSchedule(schedule string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if err := parseSchedule(schedule); err != nil {
		errs = append(errs, field.Invalid(p, schedule, err.Error()))
	}
	if strings.Contains(schedule, "TZ") {
		errs = append(errs, field.Invalid(p, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
	}
	return errs
}

// validateTimeZone accepts IANA zone names this server's time zone database
// knows, such as "Europe/Paris"; "Local" is rejected.
func validateTimeZone(tz *string, p *field.Path) field.ErrorList {
	if tz == nil {
		return nil
	}
	if *tz == "" {
		return field.ErrorList{field.Invalid(p, *tz, "timeZone must be nil or non-empty string")}
	}
	for _, part := range strings.Split(*tz, "/") {
		if part == "." || part == ".." || strings.HasPrefix(part, "-") || !timeZonePart.MatchString(part) {
			return field.ErrorList{field.Invalid(p, *tz, "unknown time zone "+*tz)}
		}
	}
	var errs field.ErrorList
	if strings.EqualFold(*tz, "Local") {
		errs = append(errs, field.Invalid(p, *tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"))
	}
	if _, err := time.LoadLocation(*tz); err != nil {
		errs = append(errs, field.Invalid(p, *tz, err.Error()))
	}
	return errs
}
