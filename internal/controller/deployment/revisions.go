package deployment

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Annotations the controller keeps on Deployments and ReplicaSets.
const (
	revisionAnnotation        = "deployment.kubernetes.io/revision"
	revisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	desiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	maxReplicasAnnotation     = "deployment.kubernetes.io/max-replicas"
)

// notCopied are the Deployment annotations that are not copied to its
// ReplicaSets (nor back on rollback).
var notCopied = map[string]bool{
	corev1.LastAppliedConfigAnnotation: true,
	revisionAnnotation:                 true,
	revisionHistoryAnnotation:          true,
	desiredReplicasAnnotation:          true,
	maxReplicasAnnotation:              true,
	rollbackToAnnotation:               true,
}

// revision reads the revision annotation; 0 if absent.
func revision(obj metav1.Object) (int64, error) {
	v, ok := obj.GetAnnotations()[revisionAnnotation]
	if !ok {
		return 0, nil
	}
	return strconv.ParseInt(v, 10, 64)
}

// maxRevision is the highest revision among rss (unparsable ones skipped).
func maxRevision(rss []*appsv1.ReplicaSet) int64 {
	var top int64
	for _, rs := range rss {
		if v, err := revision(rs); err == nil && v > top {
			top = v
		}
	}
	return top
}

// lastRevision is the second highest revision among rss: the one before
// the current.
func lastRevision(rss []*appsv1.ReplicaSet) int64 {
	var top, second int64
	for _, rs := range rss {
		v, err := revision(rs)
		if err != nil {
			continue
		}
		if v >= top {
			top, second = v, top
		} else if v > second {
			second = v
		}
	}
	return second
}

// setDeploymentRevision sets d's revision annotation; true if it changed.
func setDeploymentRevision(d *appsv1.Deployment, rev string) bool {
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	if d.Annotations[revisionAnnotation] == rev {
		return false
	}
	d.Annotations[revisionAnnotation] = rev
	return true
}

// setNewReplicaSetAnnotations copies d's annotations to its new ReplicaSet
// and raises the ReplicaSet's revision to newRevision if it is lower,
// remembering the old one in revision-history (a rollback to it). A
// ReplicaSet about to be created also gets the replicas annotations. It
// returns whether anything changed.
func setNewReplicaSetAnnotations(log *slog.Logger, d *appsv1.Deployment, rs *appsv1.ReplicaSet, newRevision string, exists bool) bool {
	changed := copyAnnotationsToReplicaSet(d, rs)
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	oldRevision, had := rs.Annotations[revisionAnnotation]
	oldRev, err := strconv.ParseInt(oldRevision, 10, 64)
	if err != nil {
		if oldRevision != "" {
			log.Info("replica set has a revision that is not a number; leaving it", "replicaSet", rs.Name, "revision", oldRevision)
			return false
		}
		oldRev = 0
	}
	newRev, err := strconv.ParseInt(newRevision, 10, 64)
	if err != nil {
		return false
	}
	if oldRev < newRev {
		rs.Annotations[revisionAnnotation] = newRevision
		changed = true
		if had {
			appendRevisionHistory(log, rs, oldRevision)
		}
	}
	if !exists && setReplicasAnnotations(rs, *d.Spec.Replicas, *d.Spec.Replicas+maxSurge(d)) {
		changed = true
	}
	return changed
}

// appendRevisionHistory adds old to the revision-history annotation,
// dropping the oldest entries to stay within maxRevisionHistoryInChars.
func appendRevisionHistory(log *slog.Logger, rs *appsv1.ReplicaSet, old string) {
	history := rs.Annotations[revisionHistoryAnnotation]
	if history == "" {
		rs.Annotations[revisionHistoryAnnotation] = old
		return
	}
	entries := strings.Split(history, ",")
	total := len(history) + len(old) + 1
	start := 0
	for total > maxRevisionHistoryInChars && start < len(entries) {
		total -= len(entries[start]) + 1
		start++
	}
	if total > maxRevisionHistoryInChars {
		log.Info("revision history of replica set is full; not recording", "replicaSet", rs.Name, "revision", old)
		return
	}
	rs.Annotations[revisionHistoryAnnotation] = strings.Join(append(entries[start:], old), ",")
}

// copyAnnotationsToReplicaSet copies d's annotations, except the
// controller's own, onto rs; true if rs changed.
func copyAnnotationsToReplicaSet(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	changed := false
	for k, v := range d.Annotations {
		if cur, ok := rs.Annotations[k]; notCopied[k] || (ok && cur == v) {
			continue
		}
		rs.Annotations[k] = v
		changed = true
	}
	return changed
}

// setAnnotationsFromReplicaSet gives d the annotations of the ReplicaSet
// it rolls back to, keeping d's own controller annotations.
func setAnnotationsFromReplicaSet(d *appsv1.Deployment, rs *appsv1.ReplicaSet) {
	kept := map[string]string{}
	for k, v := range d.Annotations {
		if notCopied[k] {
			kept[k] = v
		}
	}
	for k, v := range rs.Annotations {
		if !notCopied[k] {
			kept[k] = v
		}
	}
	d.Annotations = kept
}

// setReplicasAnnotations records the Deployment's desired and maximum
// replicas on rs; true if they changed.
func setReplicasAnnotations(rs *appsv1.ReplicaSet, desired, most int32) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	changed := false
	for k, v := range map[string]string{desiredReplicasAnnotation: fmt.Sprint(desired), maxReplicasAnnotation: fmt.Sprint(most)} {
		if rs.Annotations[k] != v {
			rs.Annotations[k] = v
			changed = true
		}
	}
	return changed
}

func replicasAnnotationsNeedUpdate(rs *appsv1.ReplicaSet, desired, most int32) bool {
	return rs.Annotations[desiredReplicasAnnotation] != fmt.Sprint(desired) ||
		rs.Annotations[maxReplicasAnnotation] != fmt.Sprint(most)
}

// int32Annotation reads a non-negative int32 annotation.
func int32Annotation(rs *appsv1.ReplicaSet, key string) (int32, bool) {
	v, ok := rs.Annotations[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil || n > 1<<31-1 {
		return 0, false
	}
	return int32(n), true
}

// rollbackTo reads the deprecated rollback annotation that old clients set
// to ask the controller for a rollback; nil if absent or invalid.
func rollbackTo(d *appsv1.Deployment) *int64 {
	v := d.Annotations[rollbackToAnnotation]
	if v == "" {
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil
	}
	return &n
}
