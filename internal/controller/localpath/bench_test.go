package localpath_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"orch/internal/controller/controllertest"
	"orch/internal/controller/localpath"
	"orch/internal/controller/pvbinder"
)

// BenchmarkProvision is the time from a claim whose node the scheduler has
// picked to the claim being Bound to its new local-path volume, one claim
// at a time, with the provisioner and the binder on the in-process
// apiserver and embedded etcd: what a StatefulSet's replica waits for
// between its scheduling and its start, less the kubelet.
func BenchmarkProvision(b *testing.B) {
	env := controllertest.New(b, "app")
	env.Start(b, localpath.New(env.Context, b.TempDir()), pvbinder.New(env.Context))
	client, ctx := env.Client, b.Context()
	if _, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	createClass(b, client, "local-path", corev1.PersistentVolumeReclaimDelete, storagev1.VolumeBindingWaitForFirstConsumer, true)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		name := fmt.Sprintf("c%d", i)
		w, err := client.CoreV1().PersistentVolumeClaims("app").Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
		if err != nil {
			b.Fatal(err)
		}
		createClaim(b, client, name, "local-path", "n1")
		bound := false
		for ev := range w.ResultChan() {
			if c, ok := ev.Object.(*corev1.PersistentVolumeClaim); ok && ev.Type == watch.Modified && c.Status.Phase == corev1.ClaimBound {
				bound = true
				break
			}
		}
		w.Stop()
		if !bound {
			b.Fatalf("claim %s: the watch ended before it was bound", name)
		}
	}
}
