package node

import (
	"context"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"orch/internal/apiserver/authz"
)

// can reports whether node may get the object.
func can(a *Authorizer, node, resource, ns, name string) bool {
	group := ""
	if resource == "volumeattachments" {
		group = "storage.k8s.io"
	}
	d, _, _ := a.Authorize(context.Background(), authz.Attributes{User: nodeUser(node), Verb: "get",
		ResourceRequest: true, APIGroup: group, Resource: resource, Namespace: ns, Name: name})
	return d == authz.Allow
}

// TestRelationshipsChange plays a sequence of watch events and checks,
// after each, which nodes may get which objects.
func TestRelationshipsChange(t *testing.T) {
	type check struct {
		node, resource, ns, name string
		want                     bool
	}
	withEphemeral := func(p *corev1.Pod, secret string) *corev1.Pod {
		p = p.DeepCopy()
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debug", EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: secret}}}}}})
		return p
	}
	recreated := func(p *corev1.Pod, node string) *corev1.Pod {
		p = p.DeepCopy()
		p.UID += "-2"
		p.Spec.NodeName = node
		return p
	}
	a1 := pod("a1", "n1", secretVolume("s"))
	a2 := pod("a2", "n1", secretVolume("s"), claimVolume("c"))
	b1 := pod("b1", "n2", secretVolume("s"))
	pvc := volume("pv", "ns1", "c", corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "d",
		NodeExpandSecretRef: &corev1.SecretReference{Namespace: "ns1", Name: "pv-secret"}}})
	pvOther := volume("pv", "ns1", "other", corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{}})
	pvShared := volume("pv-b", "ns1", "c", corev1.PersistentVolumeSource{RBD: &corev1.RBDPersistentVolumeSource{
		SecretRef: &corev1.SecretReference{Name: "pv-secret"}}})

	steps := []struct {
		name   string
		update []any
		delete []any
		checks []check
	}{
		{"two pods on n1 use s", []any{a1, a2, b1}, nil, []check{
			{"n1", "secrets", "ns1", "s", true}, {"n2", "secrets", "ns1", "s", true}, {"n3", "secrets", "ns1", "s", false},
			{"n1", "pods", "ns1", "a1", true}, {"n2", "pods", "ns1", "a1", false}}},
		{"an unchanged update adds nothing", []any{a1, a1.DeepCopy()}, nil, nil},
		{"deleting one of the two keeps access", nil, []any{a1}, []check{
			{"n1", "secrets", "ns1", "s", true}, {"n1", "pods", "ns1", "a1", false}}},
		{"deleting the last revokes it", nil, []any{a2}, []check{
			{"n1", "secrets", "ns1", "s", false}, {"n1", "persistentvolumeclaims", "ns1", "c", false}, {"n2", "secrets", "ns1", "s", true}}},
		{"a pod recreated on another node moves access", []any{a2, recreated(a2, "n3")}, nil, []check{
			{"n1", "secrets", "ns1", "s", false}, {"n3", "secrets", "ns1", "s", true}, {"n3", "pods", "ns1", "a2", true}, {"n1", "pods", "ns1", "a2", false}}},
		{"a pod seen unbound drops what it added", []any{recreated(a2, "")}, nil, []check{
			{"n3", "secrets", "ns1", "s", false}, {"n3", "pods", "ns1", "a2", false}}},
		{"an ephemeral container adds a secret", []any{a2, withEphemeral(a2, "debug-secret")}, nil, []check{
			{"n1", "secrets", "ns1", "debug-secret", true}, {"n1", "secrets", "ns1", "s", true}}},
		{"a volume bound to the claim, and its secret", []any{pvc}, nil, []check{
			{"n1", "persistentvolumes", "", "pv", true}, {"n1", "secrets", "ns1", "pv-secret", true}, {"n2", "persistentvolumes", "", "pv", false}}},
		{"a second volume naming the same secret (in the claim's namespace)", []any{pvShared}, nil, []check{{"n1", "secrets", "ns1", "pv-secret", true}}},
		{"the volume rebound elsewhere", []any{pvOther}, nil, []check{
			{"n1", "persistentvolumes", "", "pv", false}, {"n1", "secrets", "ns1", "pv-secret", true}}},
		{"the other volume deleted", nil, []any{pvShared}, []check{{"n1", "secrets", "ns1", "pv-secret", false}}},
		{"the claim's pod deleted", []any{pvc}, []any{a2}, []check{
			{"n1", "persistentvolumes", "", "pv", false}, {"n1", "secrets", "ns1", "pv-secret", false}}},
		{"an attachment", []any{attachment("va", "n1")}, nil, []check{
			{"n1", "volumeattachments", "", "va", true}, {"n2", "volumeattachments", "", "va", false}}},
		{"the attachment moved", []any{attachment("va", "n2")}, nil, []check{
			{"n1", "volumeattachments", "", "va", false}, {"n2", "volumeattachments", "", "va", true}}},
		{"the attachment deleted", nil, []any{attachment("va", "n2")}, []check{{"n2", "volumeattachments", "", "va", false}}},
		{"other types are ignored", []any{&corev1.PersistentVolumeClaim{}, "x", nil}, []any{&corev1.Secret{}}, nil},
	}
	a := New()
	for _, s := range steps {
		for _, o := range s.update {
			a.Update(o)
		}
		for _, o := range s.delete {
			a.Delete(o)
		}
		for _, c := range s.checks {
			if got := can(a, c.node, c.resource, c.ns, c.name); got != c.want {
				t.Errorf("%s: %s get %s %s/%s = %v, want %v", s.name, c.node, c.resource, c.ns, c.name, got, c.want)
			}
		}
	}
	// Everything deleted leaves nothing behind.
	for _, o := range []any{b1, a2, pvc, pvOther, attachment("va", "")} {
		a.Delete(o)
	}
	if len(a.reach)+len(a.pods)+len(a.volumes)+len(a.volumesByClaim)+len(a.volumesBySecret)+len(a.attachments) != 0 {
		t.Errorf("left behind: reach %v pods %v volumes %v byClaim %v bySecret %v attachments %v",
			a.reach, a.pods, a.volumes, a.volumesByClaim, a.volumesBySecret, a.attachments)
	}
}

// TestConcurrentUpdates runs updates and questions at once (for -race) and
// checks the state they converge to.
func TestConcurrentUpdates(t *testing.T) {
	a := New()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				p := pod(fmt.Sprintf("p%d-%d", w, i), "n1", secretVolume("s"))
				a.Update(p)
				can(a, "n1", "secrets", "ns1", "s")
				if i%2 == 1 {
					a.Delete(p)
				}
			}
		}()
	}
	wg.Wait()
	if got := a.reach[key{secretKind, "ns1", "s"}]["n1"]; got != 400 {
		t.Errorf("secret s is used by %d pods on n1, want 400", got)
	}
}
