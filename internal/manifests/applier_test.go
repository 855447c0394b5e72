package manifests

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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"orch/internal/envtest"
	builtin "orch/manifests"
)

const appV1 = `apiVersion: v1
kind: ConfigMap
metadata:
  name: app-config
data:
  greeting: hello
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
  namespace: kube-system
spec:
  replicas: 2
  selector:
    matchLabels: {app: app}
  template:
    metadata:
      labels: {app: app}
    spec:
      containers:
      - name: app
        image: busybox
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: app-priority
  namespace: default   # dropped: PriorityClasses are cluster-scoped
value: 1000
`

// startApplier runs an Applier on dir against s until the test ends.
func startApplier(t *testing.T, s *envtest.Server, dir string) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("ORCH_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	a := &Applier{Dir: dir, Config: s.Config, Log: log, interval: 100 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start returned %v after its context ended", err)
		}
	})
}

// TestApplier drives the Applier against the real apiserver on etcd: files
// added and changed are applied, broken files apply nothing and say where
// they are broken, failures are tried again, and Events record it all.
func TestApplier(t *testing.T) {
	s := envtest.Start(t)
	client := kubernetes.NewForConfigOrDie(s.Config)
	ctx := context.Background()
	for _, ns := range []string{"default", "kube-system"} { // orch's bootstrap makes them; it does not run here
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(t.TempDir(), "manifests")
	if err := WriteDefaults(builtin.Defaults, dir, nil); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "app.yaml", appV1)
	startApplier(t, s, dir)

	// The built-in defaults and a dropped file are applied.
	envtest.Eventually(t, "the built-in local-storage StorageClass", func() (bool, error) {
		sc, err := client.StorageV1().StorageClasses().Get(ctx, "local-storage", metav1.GetOptions{})
		return err == nil && sc.Provisioner == "kubernetes.io/no-provisioner", err
	})
	var cm *corev1.ConfigMap
	envtest.Eventually(t, "ConfigMap default/app-config", func() (ok bool, err error) {
		cm, err = client.CoreV1().ConfigMaps("default").Get(ctx, "app-config", metav1.GetOptions{})
		return err == nil, err
	})
	if cm.Data["greeting"] != "hello" {
		t.Errorf("ConfigMap data %v", cm.Data)
	}
	if mf := cm.ManagedFields; len(mf) != 1 || mf[0].Manager != FieldManager || mf[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Errorf("managedFields %+v, want one Apply entry of %q", mf, FieldManager)
	}
	envtest.Eventually(t, "Deployment kube-system/app", func() (bool, error) {
		d, err := client.AppsV1().Deployments("kube-system").Get(ctx, "app", metav1.GetOptions{})
		return err == nil && *d.Spec.Replicas == 2, err
	})
	envtest.Eventually(t, "PriorityClass app-priority", func() (bool, error) {
		pc, err := client.SchedulingV1().PriorityClasses().Get(ctx, "app-priority", metav1.GetOptions{})
		return err == nil && pc.Value == 1000, err
	})
	envtest.Eventually(t, "an AppliedManifest event about the ConfigMap", func() (bool, error) {
		return len(appliedEvents(t, client, "ConfigMap", "app-config", cm.UID)) == 1, nil
	})
	deployment, _ := client.AppsV1().Deployments("kube-system").Get(ctx, "app", metav1.GetOptions{})

	// Touching a file without changing it applies nothing again.
	later := time.Now().Add(time.Second)
	if err := os.Chtimes(filepath.Join(dir, "app.yaml"), later, later); err != nil {
		t.Fatal(err)
	}
	waitForScans(t, client, dir, "after-touch")
	if n := len(appliedEvents(t, client, "ConfigMap", "app-config", cm.UID)); n != 1 {
		t.Errorf("after touching the file: %d AppliedManifest events about the ConfigMap, want still 1", n)
	}

	// A changed file updates the objects; unchanged objects are not written.
	write(t, dir, "app.yaml", strings.Replace(appV1, "greeting: hello", "greeting: bonjour", 1))
	envtest.Eventually(t, "the ConfigMap's new data", func() (bool, error) {
		cm, err := client.CoreV1().ConfigMaps("default").Get(ctx, "app-config", metav1.GetOptions{})
		return err == nil && cm.Data["greeting"] == "bonjour", err
	})
	envtest.Eventually(t, "a second AppliedManifest event about the ConfigMap", func() (bool, error) {
		return len(appliedEvents(t, client, "ConfigMap", "app-config", cm.UID)) == 2, nil
	})
	if d, err := client.AppsV1().Deployments("kube-system").Get(ctx, "app", metav1.GetOptions{}); err != nil || d.ResourceVersion != deployment.ResourceVersion {
		t.Errorf("re-applying the unchanged Deployment wrote it: resourceVersion %s -> %v (err %v)", deployment.ResourceVersion, d.ResourceVersion, err)
	}

	// A broken file applies nothing, not even its good documents, and says
	// which file and line.
	write(t, dir, "broken.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: half\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\n   labels: x\n")
	path := filepath.Join(dir, "broken.yaml")
	envtest.Eventually(t, "an ApplyManifestFailed event naming broken.yaml:10", func() (bool, error) {
		for _, e := range kubeSystemEvents(t, client) {
			if e.Reason == ReasonFailed && e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, path+":10: not valid YAML or JSON") {
				return true, nil
			}
		}
		return false, nil
	})
	if _, err := client.CoreV1().ConfigMaps("default").Get(ctx, "half", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the good document of a broken file was applied (get: %v)", err)
	}

	// Skipped, hidden and other files are not applied; a deleted file's
	// objects stay.
	write(t, dir, "skipped.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: skipped}\n")
	write(t, dir, "skipped.yaml.skip", "")
	write(t, dir, ".hidden.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: hidden}\n")
	write(t, dir, "notes.txt", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: notes}\n")
	if err := os.Remove(filepath.Join(dir, "app.yaml")); err != nil {
		t.Fatal(err)
	}
	waitForScans(t, client, dir, "after-skip")
	for _, name := range []string{"skipped", "hidden", "notes"} {
		if _, err := client.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("ConfigMap %s was applied (get: %v)", name, err)
		}
	}
	if _, err := client.CoreV1().ConfigMaps("default").Get(ctx, "app-config", metav1.GetOptions{}); err != nil {
		t.Errorf("deleting app.yaml deleted its ConfigMap: %v", err)
	}

	// A file that fails (its namespace does not exist yet; a kind the
	// server does not serve) is tried again and applied once it can be.
	write(t, dir, "later.json", `{"apiVersion": "v1", "kind": "List", "items": [
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "later", "namespace": "later"}},
		{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}]}`)
	envtest.Eventually(t, "ApplyManifestFailed events about the ConfigMap and the Widget", func() (bool, error) {
		var cmFailed, widgetFailed bool
		for _, e := range kubeSystemEvents(t, client) {
			cmFailed = cmFailed || e.Reason == ReasonFailed && e.InvolvedObject.Name == "later" && strings.Contains(e.Message, "later.json")
			widgetFailed = widgetFailed || e.Reason == ReasonFailed && e.InvolvedObject.Kind == "Widget" &&
				strings.Contains(e.Message, `the server has no resource for kind "Widget" in "example.com/v1"`)
		}
		return cmFailed && widgetFailed, nil
	})
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "later"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "ConfigMap later/later, applied on a retry", func() (bool, error) {
		_, err := client.CoreV1().ConfigMaps("later").Get(ctx, "later", metav1.GetOptions{})
		return err == nil, err
	})
}

// waitForScans writes a marker manifest and waits until it is applied, so
// that every change made before it has been seen by a scan.
func waitForScans(t *testing.T, client kubernetes.Interface, dir, marker string) {
	t.Helper()
	write(t, dir, "zz-"+marker+".yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "+marker+"}\n")
	envtest.Eventually(t, "marker ConfigMap "+marker, func() (bool, error) {
		_, err := client.CoreV1().ConfigMaps("default").Get(context.Background(), marker, metav1.GetOptions{})
		return err == nil, err
	})
}

func kubeSystemEvents(t *testing.T, client kubernetes.Interface) []corev1.Event {
	t.Helper()
	list, err := client.CoreV1().Events(EventNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// appliedEvents returns the AppliedManifest events about one object.
func appliedEvents(t *testing.T, client kubernetes.Interface, kind, name string, uid any) []corev1.Event {
	t.Helper()
	var out []corev1.Event
	for _, e := range kubeSystemEvents(t, client) {
		if e.Reason == ReasonApplied && e.Type == corev1.EventTypeNormal && e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name {
			if e.InvolvedObject.UID != uid {
				t.Errorf("event %q is about UID %s, want %v", e.Message, e.InvolvedObject.UID, uid)
			}
			out = append(out, e)
		}
	}
	return out
}
