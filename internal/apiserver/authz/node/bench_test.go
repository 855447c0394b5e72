package node

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"orch/internal/apiserver/authz"
)

// bigCluster is 500 nodes with 30 pods each; every pod names three
// secrets (one shared by the whole namespace), a config map and a claim
// with a bound volume.
func bigCluster() *Authorizer {
	a := New()
	for n := range 500 {
		for p := range 30 {
			name := fmt.Sprintf("n%d-p%d", n, p)
			pd := pod(name, fmt.Sprintf("n%d", n), secretVolume(name+"-a"), secretVolume(name+"-b"), secretVolume("shared"), claimVolume(name+"-claim"))
			pd.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name + "-cm"}}}}
			a.Update(pd)
			a.Update(volume(name+"-pv", "ns1", name+"-claim", corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "d",
				NodeStageSecretRef: &corev1.SecretReference{Namespace: "ns1", Name: name + "-stage"}}}))
		}
	}
	return a
}

func BenchmarkAuthorize(b *testing.B) {
	a := bigCluster()
	get := func(resource, ns, name string) authz.Attributes {
		return authz.Attributes{User: nodeUser("n7"), Verb: "get", ResourceRequest: true, Resource: resource, Namespace: ns, Name: name}
	}
	list := get("pods", "", "")
	list.Verb, list.FieldSelector = "watch", "spec.nodeName=n7"
	cases := []struct {
		name  string
		attrs authz.Attributes
		want  authz.Decision
	}{
		{"secret allowed", get("secrets", "ns1", "n7-p3-a"), authz.Allow},
		{"secret shared by every node", get("secrets", "ns1", "shared"), authz.Allow},
		{"secret denied", get("secrets", "ns1", "n8-p3-a"), authz.NoOpinion},
		{"secret through a volume", get("secrets", "ns1", "n7-p3-stage"), authz.Allow},
		{"volume", get("persistentvolumes", "", "n7-p3-pv"), authz.Allow},
		{"watch own pods", list, authz.Allow},
		{"static rule", authz.Attributes{User: nodeUser("n7"), Verb: "watch", ResourceRequest: true, APIGroup: "node.k8s.io", Resource: "runtimeclasses"}, authz.Allow},
		{"not a node", authz.Attributes{User: authz.User{Name: "jane"}, Verb: "get", ResourceRequest: true, Resource: "secrets", Namespace: "ns1", Name: "x"}, authz.NoOpinion},
	}
	ctx := context.Background()
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			if d, _, _ := a.Authorize(ctx, c.attrs); d != c.want {
				b.Fatalf("got %v, want %v", d, c.want)
			}
			b.ReportAllocs()
			for b.Loop() {
				a.Authorize(ctx, c.attrs)
			}
		})
	}
}

func BenchmarkUpdatePod(b *testing.B) {
	a := bigCluster()
	p := pod("bench", "n7", secretVolume("x"), secretVolume("shared"), claimVolume("c"))
	b.ReportAllocs()
	uids := []types.UID{"u1", "u2"}
	for i := 0; b.Loop(); i++ {
		p.UID = uids[i%2] // a recreated pod each time: its references are taken again
		a.Update(p)
	}
}
