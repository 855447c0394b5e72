package volumes

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"orch/internal/kubelet/podconfig"
)

var testNow = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// requireRoot skips tests that mount tmpfs or change ownership.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (tmpfs mounts, chown)")
	}
}

// newManager is a Manager under a temporary root with a fake client
// holding objs and a fake clock at testNow. Whatever the test leaves
// mounted is unmounted before the root is removed.
func newManager(t *testing.T, objs ...runtime.Object) (*Manager, *fake.Clientset, *clocktesting.FakeClock) {
	t.Helper()
	root := t.TempDir()
	client := fake.NewClientset(objs...)
	m := New(root, client, slog.New(slog.NewTextHandler(io.Discard, nil)))
	clk := clocktesting.NewFakeClock(testNow)
	m.Clock = clk
	t.Cleanup(func() {
		if err := unmountAll(root); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return m, client, clk
}

// testPod is pod default/p (uid uid-1) with container c mounting every
// volume at /v/<name>.
func testPod(vols ...corev1.Volume) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", UID: "uid-1"},
		Spec: corev1.PodSpec{
			ServiceAccountName: "default",
			Containers:         []corev1.Container{{Name: "c"}},
			Volumes:            vols,
		},
	}
	for _, v := range vols {
		pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts,
			corev1.VolumeMount{Name: v.Name, MountPath: "/v/" + v.Name})
	}
	return pod
}

func vol(name string, src corev1.VolumeSource) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: src}
}

// mustSetup runs Setup and fails the test on any error.
func mustSetup(t *testing.T, m *Manager, pod *corev1.Pod) map[string]podconfig.Volume {
	t.Helper()
	vols, err := m.Setup(context.Background(), pod)
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	return vols
}

// setupError runs Setup and returns its error text, failing when there
// is none.
func setupError(t *testing.T, m *Manager, pod *corev1.Pod) error {
	t.Helper()
	_, err := m.Setup(context.Background(), pod)
	if err == nil {
		t.Fatal("Setup: no error")
	}
	return err
}

// mounted tells whether dir is a mount point in /proc/self/mountinfo.
func mounted(t *testing.T, dir string) bool {
	t.Helper()
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false
	}
	mps, err := mountsUnder(real)
	if err != nil {
		t.Fatal(err)
	}
	for _, mp := range mps {
		if mp == real {
			return true
		}
	}
	return false
}

// mountOptions are the super options of the mount at dir.
func mountOptions(t *testing.T, dir string) string {
	t.Helper()
	real, _ := filepath.EvalSymlinks(dir)
	data, err := os.ReadFile(mountInfoPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if mp, ok := mountPoint(line); ok && mp == real {
			_, after, _ := strings.Cut(line, " - ")
			return after
		}
	}
	return ""
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

func ptr[T any](v T) *T { return &v }

func newTestLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
