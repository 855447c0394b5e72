package job

import (
	"math"
	"sort"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

const (
	// noIndex is the completion index of a pod that has none (or a bad one).
	noIndex = -1
	// indexEnvName is the variable Indexed jobs' containers read their
	// index from.
	indexEnvName = "JOB_COMPLETION_INDEX"
	// maxGeneratedNameLength is the longest generateName whose random
	// suffix still fits a 63-character name.
	maxGeneratedNameLength = 63 - 5
)

func isIndexed(job *batchv1.Job) bool {
	return job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion
}

func hasBackoffLimitPerIndex(job *batchv1.Job) bool {
	return isIndexed(job) && job.Spec.BackoffLimitPerIndex != nil
}

// completionIndex reads the pod's batch.kubernetes.io/job-completion-index
// annotation.
func completionIndex(pod *corev1.Pod) int {
	v, ok := pod.Annotations[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		return noIndex
	}
	ix, err := strconv.Atoi(v)
	if err != nil || ix < 0 {
		return noIndex
	}
	return ix
}

// validIndex returns the pod's index if it is one of an Indexed job's.
func validIndex(job *batchv1.Job, pod *corev1.Pod) (int, bool) {
	if !isIndexed(job) || job.Spec.Completions == nil {
		return noIndex, false
	}
	ix := completionIndex(pod)
	return ix, ix != noIndex && ix < int(*job.Spec.Completions)
}

// sortByIndex sorts pods by completion index, those without one first.
func sortByIndex(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool { return completionIndex(pods[i]) < completionIndex(pods[j]) })
}

// indexesOf returns the completion indexes of pods.
func indexesOf(pods []*corev1.Pod) []int {
	var out []int
	for _, p := range pods {
		if ix := completionIndex(p); ix != noIndex {
			out = append(out, ix)
		}
	}
	return out
}

// indexedGenerateName is "<job>-<index>-", the job name cut short so that
// the generated name fits.
func indexedGenerateName(jobName string, index int) string {
	suffix := "-" + strconv.Itoa(index) + "-"
	if len(jobName)+len(suffix) > maxGeneratedNameLength {
		jobName = jobName[:maxGeneratedNameLength-len(suffix)]
	}
	return jobName + suffix
}

// addIndexEnv gives every container JOB_COMPLETION_INDEX from the pod's
// completion index label, unless it sets the variable itself.
func addIndexEnv(spec *corev1.PodSpec) {
	for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			addEnvOnce(&list[i])
		}
	}
}

func addEnvOnce(c *corev1.Container) {
	for _, e := range c.Env {
		if e.Name == indexEnvName {
			return
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: indexEnvName, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['" + batchv1.JobCompletionIndexAnnotation + "']"},
	}})
}

// failureCounts reads the per-index failure annotations of a pod:
// failures that count towards backoffLimitPerIndex, and those a policy
// ignored.
func failureCounts(pod *corev1.Pod) (counted, ignored int32) {
	return annotationInt32(pod, batchv1.JobIndexFailureCountAnnotation), annotationInt32(pod, batchv1.JobIndexIgnoredFailureCountAnnotation)
}

func annotationInt32(pod *corev1.Pod, key string) int32 {
	v, err := strconv.Atoi(pod.Annotations[key])
	if err != nil || v < 0 || v > math.MaxInt32 {
		return 0
	}
	return int32(v)
}
