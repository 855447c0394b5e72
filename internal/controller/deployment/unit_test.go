package deployment

import (
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The golden values were computed by upstream's code path
// (k8s.io/kubernetes v1.37.2, pkg/util/hash.DeepHashObject into FNV-32a,
// as controller.ComputeHash does) for the same template.
func TestTemplateHashMatchesUpstream(t *testing.T) {
	const tmpl = `{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"nginx","image":"nginx:1.27","resources":{"limits":{"cpu":"1"}},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","securityContext":{},"schedulerName":"default-scheduler"}}`
	var template corev1.PodTemplateSpec
	if err := json.Unmarshal([]byte(tmpl), &template); err != nil {
		t.Fatal(err)
	}
	three := int32(3)
	if got := templateHash(&template, nil); got != "6dbd6bb6bb" {
		t.Errorf("hash %q, want 6dbd6bb6bb", got)
	}
	if got := templateHash(&template, &three); got != "6fbc664469" {
		t.Errorf("hash with collisionCount 3 %q, want 6fbc664469", got)
	}
}

func TestReplicaSetName(t *testing.T) {
	if got := replicaSetName("web", "6dbd6bb6bb"); got != "web-6dbd6bb6bb" {
		t.Fatal(got)
	}
	long := strings.Repeat("a", 260)
	if got := replicaSetName(long, "6dbd6bb6bb"); len(got) != 253 || !strings.HasSuffix(got, "a-6dbd6bb6bb") {
		t.Fatalf("%d %q", len(got), got)
	}
}

func TestResolveFenceposts(t *testing.T) {
	pct := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	num := func(n int32) *intstr.IntOrString { v := intstr.FromInt32(n); return &v }
	tests := []struct {
		surge, unavailable    *intstr.IntOrString
		desired               int32
		wantSurge, wantUnavai int32
	}{
		{pct("25%"), pct("25%"), 5, 2, 1},  // surge rounds up, unavailable down
		{pct("25%"), pct("25%"), 4, 1, 1},  // exact
		{pct("25%"), pct("25%"), 1, 1, 0},  // 0.25 -> 1 and 0
		{pct("0%"), pct("1%"), 2, 0, 1},    // both zero -> one unavailable
		{num(0), num(0), 3, 0, 1},          // (validation forbids it, still safe)
		{num(3), num(2), 10, 3, 2},         // numbers as they are
		{pct("100%"), pct("0%"), 5, 5, 0},  // blue/green-like
		{nil, pct("30%"), 10, 0, 3},        // missing surge counts as 0
		{pct("33%"), pct("33%"), 10, 4, 3}, // 3.3 -> 4 and 3
	}
	for _, tt := range tests {
		s, u, err := resolveFenceposts(tt.surge, tt.unavailable, tt.desired)
		if err != nil || s != tt.wantSurge || u != tt.wantUnavai {
			t.Errorf("%v/%v of %d: got %d/%d (%v), want %d/%d", tt.surge, tt.unavailable, tt.desired, s, u, err, tt.wantSurge, tt.wantUnavai)
		}
	}
}

func rollingDeployment(replicas int32, surge, unavailable string) *appsv1.Deployment {
	s, u := intstr.Parse(surge), intstr.Parse(unavailable)
	return &appsv1.Deployment{Spec: appsv1.DeploymentSpec{
		Replicas: &replicas,
		Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u}},
	}}
}

func rsOf(name string, replicas int32, annotations map[string]string) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}, Spec: appsv1.ReplicaSetSpec{Replicas: &replicas}}
}

func TestNewRSNewReplicas(t *testing.T) {
	tests := []struct {
		name     string
		d        *appsv1.Deployment
		old, cur int32
		want     int32
	}{
		{"room to surge", rollingDeployment(10, "3", "2"), 10, 0, 3},
		{"at the surge limit", rollingDeployment(10, "3", "2"), 10, 3, 3},
		{"never above replicas", rollingDeployment(10, "3", "2"), 0, 9, 10},
		{"percent rounds up", rollingDeployment(5, "25%", "25%"), 5, 0, 2},
	}
	for _, tt := range tests {
		newRS := rsOf("new", tt.cur, nil)
		got, err := newRSNewReplicas(tt.d, []*appsv1.ReplicaSet{rsOf("old", tt.old, nil), newRS}, newRS)
		if err != nil || got != tt.want {
			t.Errorf("%s: got %d (%v), want %d", tt.name, got, err, tt.want)
		}
	}
	recreate := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(4)), Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}}}
	if got, _ := newRSNewReplicas(recreate, nil, rsOf("new", 0, nil)); got != 4 {
		t.Errorf("recreate: %d", got)
	}
}

// Scaling a Deployment in the middle of a rollout shares the new replicas
// out in proportion to the ReplicaSets' sizes.
func TestProportion(t *testing.T) {
	// 10 replicas, surge 3: the ReplicaSets saw max-replicas 13; now 20
	// replicas (max 23) should grow an RS of 8 to round(8*23/13) = 14.
	d := rollingDeployment(20, "3", "2")
	rs := rsOf("a", 8, map[string]string{maxReplicasAnnotation: "13"})
	if got := proportion(rs, d, 10, 0); got != 6 {
		t.Fatalf("proportion %d, want 6", got)
	}
	// It never hands out more than is left.
	if got := proportion(rs, d, 10, 7); got != 3 {
		t.Fatalf("proportion %d, want 3", got)
	}
	// Scaling to zero takes everything.
	zero := rollingDeployment(0, "3", "2")
	if got := proportion(rs, zero, -13, 0); got != -8 {
		t.Fatalf("proportion %d, want -8", got)
	}
}

func TestRevisions(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	rss := []*appsv1.ReplicaSet{
		rsOf("a", 0, map[string]string{revisionAnnotation: "3"}),
		rsOf("b", 0, map[string]string{revisionAnnotation: "7"}),
		rsOf("c", 0, map[string]string{revisionAnnotation: "5"}),
		rsOf("d", 0, map[string]string{revisionAnnotation: "x"}),
	}
	if maxRevision(rss) != 7 || lastRevision(rss) != 5 {
		t.Fatalf("max %d last %d", maxRevision(rss), lastRevision(rss))
	}
	d := rollingDeployment(4, "1", "1")
	d.Annotations = map[string]string{"kubernetes.io/change-cause": "v2", revisionAnnotation: "7", corev1.LastAppliedConfigAnnotation: "{}"}
	// Rolling back to the ReplicaSet of revision 3: it becomes revision 8
	// and remembers 3.
	rs := rss[0]
	if !setNewReplicaSetAnnotations(log, d, rs, "8", true) {
		t.Fatal("no change reported")
	}
	if rs.Annotations[revisionAnnotation] != "8" || rs.Annotations[revisionHistoryAnnotation] != "3" || rs.Annotations["kubernetes.io/change-cause"] != "v2" {
		t.Fatalf("annotations %v", rs.Annotations)
	}
	if _, ok := rs.Annotations[corev1.LastAppliedConfigAnnotation]; ok {
		t.Fatal("last-applied-configuration copied")
	}
	rs.Annotations[revisionAnnotation] = "3"
	setNewReplicaSetAnnotations(log, d, rs, "9", true)
	if rs.Annotations[revisionHistoryAnnotation] != "3,3" {
		t.Fatalf("history %q", rs.Annotations[revisionHistoryAnnotation])
	}
	// A new ReplicaSet also gets the replicas annotations.
	fresh := rsOf("new", 0, nil)
	setNewReplicaSetAnnotations(log, d, fresh, "1", false)
	if fresh.Annotations[desiredReplicasAnnotation] != "4" || fresh.Annotations[maxReplicasAnnotation] != "5" || fresh.Annotations[revisionAnnotation] != "1" {
		t.Fatalf("annotations %v", fresh.Annotations)
	}
}

func TestTimedOut(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d := rollingDeployment(1, "1", "0")
	d.Spec.ProgressDeadlineSeconds = ptr(int32(60))
	st := appsv1.DeploymentStatus{}
	setCondition(&st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, reasonRSUpdated, "", now))
	if deploymentTimedOut(d, &st, now.Add(60*time.Second)) {
		t.Fatal("timed out at the deadline")
	}
	if !deploymentTimedOut(d, &st, now.Add(61*time.Second)) {
		t.Fatal("not timed out after the deadline")
	}
	st.Conditions[0].Reason = reasonNewRSAvailable
	if deploymentTimedOut(d, &st, now.Add(time.Hour)) {
		t.Fatal("a complete rollout cannot time out")
	}
}

func ptr[T any](v T) *T { return &v }
