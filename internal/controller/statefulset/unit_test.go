package statefulset

import (
	"encoding/json"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestParentAndOrdinal(t *testing.T) {
	tests := []struct {
		name   string
		parent string
		ord    int
	}{
		{"web-0", "web", 0},
		{"my-web-12", "my-web", 12},
		{"web", "", -1},
		{"web-", "", -1},
		{"web-99999999999", "web", -1}, // does not fit in 32 bits
	}
	for _, tt := range tests {
		p, n := parentAndOrdinal(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tt.name}})
		if p != tt.parent || n != tt.ord {
			t.Errorf("%s: got (%q, %d), want (%q, %d)", tt.name, p, n, tt.parent, tt.ord)
		}
	}
}

func unitSet(replicas int32) *appsv1.StatefulSet {
	s := newSet("web", replicas)
	s.UID = "set-uid"
	s.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{claimTemplate("data")}
	return s
}

func TestNewPodIdentityAndStorage(t *testing.T) {
	set := unitSet(3)
	set.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "cfg"}}
	pod := newPod(set, 2, "web-abc")
	if pod.Name != "web-2" || pod.Namespace != ns || pod.Spec.Hostname != "web-2" || pod.Spec.Subdomain != "web-svc" {
		t.Fatalf("identity: %s/%s host %s sub %s", pod.Namespace, pod.Name, pod.Spec.Hostname, pod.Spec.Subdomain)
	}
	want := map[string]string{"app": "web", appsv1.StatefulSetPodNameLabel: "web-2", appsv1.PodIndexLabel: "2", appsv1.StatefulSetRevisionLabel: "web-abc"}
	for k, v := range want {
		if pod.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, pod.Labels[k], v)
		}
	}
	if len(pod.Spec.Volumes) != 2 || pod.Spec.Volumes[0].PersistentVolumeClaim == nil ||
		pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data-web-2" || pod.Spec.Volumes[1].Name != "cfg" {
		t.Fatalf("volumes %+v", pod.Spec.Volumes)
	}
	if !identityMatches(set, pod) || !storageMatches(set, pod) {
		t.Fatal("a new pod does not match its own identity and storage")
	}
	if ref := metav1.GetControllerOf(pod); ref == nil || ref.UID != set.UID {
		t.Fatalf("owner %+v", pod.OwnerReferences)
	}
	pod.Labels[appsv1.StatefulSetPodNameLabel] = "x"
	pod.Spec.Volumes = pod.Spec.Volumes[1:]
	if identityMatches(set, pod) || storageMatches(set, pod) {
		t.Fatal("a broken identity or storage still matches")
	}
}

func TestVersionedPodFollowsPartition(t *testing.T) {
	set := unitSet(4)
	set.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{
		Type: appsv1.RollingUpdateStatefulSetStrategyType, RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: int32p(2)},
	}
	r := &round{set: set, currentSet: set, updateSet: set,
		current: &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "old"}},
		update:  &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "new"}}}
	for ord, want := range []string{"old", "old", "new", "new"} {
		if got := revisionOf(r.versionedPod(ord)); got != want {
			t.Errorf("ordinal %d: revision %q, want %q", ord, got, want)
		}
	}
}

func TestRevisionDataRoundTrip(t *testing.T) {
	set := unitSet(1)
	set.Spec.Template.Spec.Containers[0].Image = "busybox:7"
	data, err := revisionData(set)
	if err != nil {
		t.Fatal(err)
	}
	var shape map[string]map[string]map[string]interface{}
	if err := json.Unmarshal(data, &shape); err != nil || shape["spec"]["template"]["$patch"] != "replace" || len(shape["spec"]) != 1 {
		t.Fatalf("revision data is not kubectl's patch shape: %s", data)
	}
	other := unitSet(1)
	restored, err := applyRevision(other, &appsv1.ControllerRevision{Data: runtimeRaw(data)})
	if err != nil {
		t.Fatal(err)
	}
	if restored.Spec.Template.Spec.Containers[0].Image != "busybox:7" || other.Spec.Template.Spec.Containers[0].Image != "busybox:1" {
		t.Fatal("applyRevision did not restore the template on a copy")
	}
}

// The retention policy as ownerReferences, for a pod in range and a pod
// scaled away.
func TestClaimOwnersFollowPolicy(t *testing.T) {
	set := unitSet(1) // ordinal 0 in range, 1 scaled away
	inRange := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", UID: "pod0"}}
	scaled := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", UID: "pod1"}}
	tests := []struct {
		whenDeleted, whenScaled    appsv1.PersistentVolumeClaimRetentionPolicyType
		pod                        *corev1.Pod
		wantSetOwner, wantPodOwner bool
	}{
		{retain, retain, inRange, false, false},
		{retain, retain, scaled, false, false},
		{del, retain, inRange, true, false},
		{del, retain, scaled, true, false},
		{retain, del, inRange, false, false},
		{retain, del, scaled, false, true},
		{del, del, inRange, true, false},
		{del, del, scaled, false, true},
	}
	for _, tt := range tests {
		s := set.DeepCopy()
		s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: tt.whenDeleted, WhenScaled: tt.whenScaled}
		other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "cm"}
		claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-" + tt.pod.Name, OwnerReferences: []metav1.OwnerReference{other}}}
		want := !tt.wantSetOwner && !tt.wantPodOwner
		if got := claimOwnersUpToDate(claim, s, tt.pod); got != want {
			t.Errorf("%s/%s %s: fresh claim up to date = %v, want %v", tt.whenDeleted, tt.whenScaled, tt.pod.Name, got, want)
		}
		setClaimOwners(claim, s, tt.pod)
		if hasOwner(claim, s) != tt.wantSetOwner || hasOwner(claim, tt.pod) != tt.wantPodOwner || claim.OwnerReferences[0] != other {
			t.Errorf("%s/%s %s: owners %+v", tt.whenDeleted, tt.whenScaled, tt.pod.Name, claim.OwnerReferences)
		}
		if !claimOwnersUpToDate(claim, s, tt.pod) {
			t.Errorf("%s/%s %s: not up to date after setClaimOwners", tt.whenDeleted, tt.whenScaled, tt.pod.Name)
		}
	}
}

func TestClaimOfAnotherControllerIsLeftAlone(t *testing.T) {
	set := unitSet(1)
	set.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: del, WhenScaled: del}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", UID: "pod0"}}
	yes := true
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "Thing", Name: "t", UID: "t", Controller: &yes},
	}}}
	if !claimOwnersUpToDate(claim, set, pod) {
		t.Fatal("a claim another controller manages should be left as it is")
	}
}

func TestMaxUnavailableOf(t *testing.T) {
	pct := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	num := func(n int32) *intstr.IntOrString { v := intstr.FromInt32(n); return &v }
	tests := []struct {
		v        *intstr.IntOrString
		replicas int
		want     int
	}{
		{nil, 5, 1}, {num(3), 5, 3}, {pct("50%"), 5, 2}, {pct("10%"), 5, 1}, {pct("100%"), 4, 4},
	}
	for _, tt := range tests {
		got, err := maxUnavailableOf(tt.v, tt.replicas)
		if err != nil || got != tt.want {
			t.Errorf("maxUnavailableOf(%v, %d) = %d, %v; want %d", tt.v, tt.replicas, got, err, tt.want)
		}
	}
}

func TestCompleteUpdate(t *testing.T) {
	set := unitSet(2)
	s := &appsv1.StatefulSetStatus{Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 1, CurrentReplicas: 1, CurrentRevision: "a", UpdateRevision: "b"}
	completeUpdate(set, s)
	if s.CurrentRevision != "a" {
		t.Fatal("an unfinished update was completed")
	}
	s.UpdatedReplicas = 2
	completeUpdate(set, s)
	if s.CurrentRevision != "b" || s.CurrentReplicas != 2 {
		t.Fatalf("finished update not completed: %+v", s)
	}
}

type fakeRV string

func (f *fakeRV) LastStoreSyncResourceVersion() string { return string(*f) }

func TestWritesWaitForTheCache(t *testing.T) {
	seen := fakeRV("10")
	w := newWrites(map[string]rvSource{resPods: &seen})
	uid := types.UID("u")
	w.wrote("ns/web", uid, resPods, "12")
	w.wrote("ns/web", uid, resPods, "11") // older: ignored
	if err := w.ready("ns/web"); err == nil {
		t.Fatal("ready while the cache is behind our write")
	}
	seen = "12"
	if err := w.ready("ns/web"); err != nil {
		t.Fatalf("not ready once the cache caught up: %v", err)
	}
	if err := w.ready("ns/other"); err != nil {
		t.Fatal(err)
	}
}

func runtimeRaw(b []byte) runtime.RawExtension { return runtime.RawExtension{Raw: b} }
