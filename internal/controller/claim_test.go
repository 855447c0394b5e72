package controller

import (
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func claimPod(name string, owner types.UID, match bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name)}}
	if owner != "" {
		p.OwnerReferences = []metav1.OwnerReference{{UID: owner, Controller: ptr.To(true)}}
	}
	if match {
		p.Labels = map[string]string{"app": "x"}
	}
	return p
}

func TestClaim(t *testing.T) {
	now := metav1.Now()
	owner := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: "ns", UID: "o"}}
	deleting := claimPod("deleting-orphan", "", true)
	deleting.DeletionTimestamp = &now
	other := claimPod("other-ns-orphan", "", true)
	other.Namespace = "elsewhere"
	pods := []*corev1.Pod{
		claimPod("mine", "o", true), claimPod("mine-unmatched", "o", false), claimPod("theirs", "t", true),
		claimPod("orphan", "", true), claimPod("orphan-unmatched", "", false), deleting, other,
		claimPod("orphan-gone", "", true),
	}
	var adopted, released []string
	rechecks := 0
	claim := Claim[*corev1.Pod]{
		Owner:   owner,
		Matches: func(p *corev1.Pod) bool { return p.Labels["app"] == "x" },
		Recheck: func() error { rechecks++; return nil },
		Adopt: func(p *corev1.Pod) (*corev1.Pod, error) {
			if p.Name == "orphan-gone" {
				return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, p.Name)
			}
			adopted = append(adopted, p.Name)
			return p, nil
		},
		Release: func(p *corev1.Pod) error { released = append(released, p.Name); return nil },
	}
	claimed, err := claim.Run(pods)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range claimed {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"mine", "orphan"}) || !slices.Equal(adopted, []string{"orphan"}) ||
		!slices.Equal(released, []string{"mine-unmatched"}) || rechecks != 1 {
		t.Errorf("claimed %v, adopted %v, released %v, rechecks %d; want [mine orphan], [orphan], [mine-unmatched], 1",
			names, adopted, released, rechecks)
	}

	// An owner being deleted neither adopts nor releases.
	owner.DeletionTimestamp = &now
	adopted, released = nil, nil
	if claimed, err = claim.Run(pods); err != nil || len(claimed) != 1 || len(adopted)+len(released) != 0 {
		t.Errorf("deleting owner: claimed %d, adopted %v, released %v, err %v; want only mine kept", len(claimed), adopted, released, err)
	}

	// An owner that fails the recheck adopts nothing and says why.
	owner.DeletionTimestamp = nil
	claim.Recheck = func() error { return errors.New("owner replaced") }
	adopted = nil
	if _, err = claim.Run(pods); err == nil || len(adopted) != 0 {
		t.Errorf("failed recheck: adopted %v, err %v; want no adoption and an error", adopted, err)
	}
}

func TestRecheckOwner(t *testing.T) {
	owner := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "o", Namespace: "ns", UID: "1"}}
	replaced := owner.DeepCopy()
	replaced.UID = "2"
	deleted := owner.DeepCopy()
	deleted.DeletionTimestamp = ptr.To(metav1.Now())
	if err := RecheckOwner("Pod", owner, owner.DeepCopy(), nil); err != nil {
		t.Errorf("same owner: %v", err)
	}
	for name, fresh := range map[string]*corev1.Pod{"replaced": replaced, "deleted": deleted} {
		if err := RecheckOwner("Pod", owner, fresh, nil); err == nil {
			t.Errorf("%s owner passed the recheck", name)
		}
	}
	if err := RecheckOwner("Pod", owner, nil, errors.New("read failed")); err == nil {
		t.Error("a failed read passed the recheck")
	}
}
