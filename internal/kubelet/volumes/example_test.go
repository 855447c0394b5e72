package volumes_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"orch/internal/kubelet/volumes"
)

func ExampleManager_Setup() {
	root, _ := os.MkdirTemp("", "kubelet")
	defer os.RemoveAll(root)
	client := fake.NewClientset(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app"},
		Data:       map[string]string{"greeting": "hello"},
	})
	m := volumes.New(root, client, slog.New(slog.DiscardHandler))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "8d1f"},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}},
			{Name: "missing", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}}}},
		}},
	}
	vols, err := m.Setup(context.Background(), pod)
	for _, e := range volumes.MountErrors(err) {
		fmt.Println("FailedMount:", e)
	}
	config := vols["config"]
	rel, _ := filepath.Rel(root, config.HostPath)
	data, _ := os.ReadFile(filepath.Join(config.HostPath, "greeting"))
	fmt.Println(rel, config.ReadOnly, string(data))
	if err := m.TearDown(pod.UID); err != nil {
		fmt.Println(err)
	}
	// Output:
	// FailedMount: MountVolume.SetUp failed for volume "missing" : configmaps "nope" not found
	// pods/8d1f/volumes/kubernetes.io~configmap/config true hello
}
