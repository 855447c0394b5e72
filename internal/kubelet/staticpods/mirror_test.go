package staticpods

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"orch/internal/envtest"
)

// staticPod is the static pod of manifest data on node-1, as Source
// serves it.
func staticPod(t *testing.T, data string) *corev1.Pod {
	t.Helper()
	pod, _, err := parseManifest([]byte(data), "/etc/pods/"+t.Name()+".yaml", "node-1")
	if err != nil {
		t.Fatal(err)
	}
	pod.Annotations[AnnotationSeen] = seen(time.Now())
	return pod
}

func getPod(t *testing.T, client kubernetes.Interface, ns, name string) *corev1.Pod {
	t.Helper()
	pod, err := client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

func TestMirrorAgainstAPIServer(t *testing.T) {
	env := envtest.New(t, "edge")
	client := env.Client
	ctx := context.Background()
	m := NewMirror(client, "node-1", quiet)
	static := staticPod(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: edge}\nspec:\n  containers: [{name: c, image: busybox}]\n")

	if err := m.Sync(ctx, static, nil); !errors.Is(err, ErrNodeNotRegistered) {
		t.Fatalf("Sync before the Node exists: %v, want ErrNodeNotRegistered", err)
	}
	node, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// Created.
	if err := m.Sync(ctx, static, nil); err != nil {
		t.Fatal(err)
	}
	mirror := getPod(t, client, "edge", "web-node-1")
	if mirror == nil {
		t.Fatal("no mirror pod")
	}
	if !IsMirror(mirror) || IsStatic(mirror) || !IsStatic(static) || IsMirror(static) {
		t.Errorf("IsMirror/IsStatic: mirror %v/%v, static %v/%v", IsMirror(mirror), IsStatic(mirror), IsMirror(static), IsStatic(static))
	}
	want(t, "config.mirror", mirror.Annotations[AnnotationMirror], static.Annotations[AnnotationHash])
	want(t, "config.hash", mirror.Annotations[AnnotationHash], string(static.UID))
	want(t, "config.source", mirror.Annotations[AnnotationSource], "file")
	want(t, "nodeName", mirror.Spec.NodeName, "node-1")
	if mirror.UID == static.UID {
		t.Error("the mirror has the static pod's UID; the API should give it its own")
	}
	if refs := mirror.OwnerReferences; len(refs) != 1 || refs[0].Kind != "Node" || refs[0].Name != "node-1" ||
		refs[0].UID != node.UID || refs[0].Controller == nil || !*refs[0].Controller {
		t.Errorf("owner references %+v, want the Node as controller", refs)
	}

	// Up to date: nothing done.
	if err := m.Sync(ctx, static, mirror); err != nil {
		t.Fatal(err)
	}
	if again := getPod(t, client, "edge", "web-node-1"); again.UID != mirror.UID {
		t.Error("an up-to-date mirror was replaced")
	}
	// Created again by a Sync that did not see it yet: AlreadyExists is fine.
	if err := m.Sync(ctx, static, nil); err != nil {
		t.Errorf("Sync with the mirror unseen: %v", err)
	}

	// Recreated after a user deleted it.
	if err := client.CoreV1().Pods("edge").Delete(ctx, "web-node-1", *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatal(err)
	}
	if err := m.Sync(ctx, static, nil); err != nil {
		t.Fatal(err)
	}
	recreated := getPod(t, client, "edge", "web-node-1")
	if recreated == nil || recreated.UID == mirror.UID {
		t.Fatalf("mirror not recreated: %v", recreated)
	}

	// Replaced when the static pod changes (its hash with it).
	changed := staticPod(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: edge}\nspec:\n  containers: [{name: c, image: busybox:1.36}]\n")
	if changed.Annotations[AnnotationHash] == static.Annotations[AnnotationHash] {
		t.Fatal("the changed static pod has the same hash")
	}
	if err := m.Sync(ctx, changed, recreated); err != nil {
		t.Fatal(err)
	}
	replaced := getPod(t, client, "edge", "web-node-1")
	if replaced == nil || replaced.UID == recreated.UID {
		t.Fatalf("mirror not replaced: %v", replaced)
	}
	want(t, "config.mirror after the change", replaced.Annotations[AnnotationMirror], changed.Annotations[AnnotationHash])
	want(t, "image after the change", replaced.Spec.Containers[0].Image, "busybox:1.36")

	// A mirror seen being deleted is replaced too.
	deleting := replaced.DeepCopy()
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	if err := m.Sync(ctx, changed, deleting); err != nil {
		t.Fatal(err)
	}
	if p := getPod(t, client, "edge", "web-node-1"); p == nil || p.UID == replaced.UID {
		t.Fatalf("mirror being deleted not replaced: %v", p)
	}
}

func TestMirrorLeavesOtherPodsAlone(t *testing.T) {
	env := envtest.New(t, "edge")
	client := env.Client
	ctx := context.Background()
	if _, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	m := NewMirror(client, "node-1", quiet)
	create := func(name, node string, annotations map[string]string) *corev1.Pod {
		t.Helper()
		pod, err := client.CoreV1().Pods("edge").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
			Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return pod
	}
	mirrorOf := func(hash string) map[string]string {
		return map[string]string{AnnotationMirror: hash, AnnotationHash: hash, AnnotationSource: SourceFile}
	}

	// A regular pod holds the static pod's name: left alone.
	regular := create("web-node-1", "node-1", nil)
	static := staticPod(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: edge}\nspec:\n  containers: [{name: c, image: busybox}]\n")
	if err := m.Sync(ctx, static, regular); !errors.Is(err, ErrNotMirror) {
		t.Errorf("Sync over a regular pod: %v, want ErrNotMirror", err)
	}
	// So does another node's mirror pod.
	other := create("db-node-1", "node-2", mirrorOf("h0"))
	db := staticPod(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: db, namespace: edge}\nspec:\n  containers: [{name: c, image: busybox}]\n")
	if err := m.Sync(ctx, db, other); !errors.Is(err, ErrNotMirror) {
		t.Errorf("Sync over another node's mirror: %v, want ErrNotMirror", err)
	}

	// Orphans: only this node's mirrors without a static pod go.
	orphan := create("gone-node-1", "node-1", mirrorOf("h1"))
	kept := create("kept-node-1", "node-1", mirrorOf("h2"))
	keptStatic := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "kept-node-1", Namespace: "edge"}}
	list, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var apiPods []*corev1.Pod
	for i := range list.Items {
		apiPods = append(apiPods, &list.Items[i])
	}
	if err := m.DeleteOrphans(ctx, []*corev1.Pod{keptStatic}, apiPods); err != nil {
		t.Fatal(err)
	}
	if getPod(t, client, "edge", "gone-node-1") != nil {
		t.Error("orphaned mirror pod not deleted")
	}
	for _, p := range []*corev1.Pod{regular, other, kept} {
		if got := getPod(t, client, "edge", p.Name); got == nil || got.UID != p.UID {
			t.Errorf("pod %s touched: %v", p.Name, got)
		}
	}
	// Deleting what is already gone is no error.
	if err := m.DeleteOrphans(ctx, nil, []*corev1.Pod{orphan}); err != nil {
		t.Errorf("DeleteOrphans of a deleted pod: %v", err)
	}
}

// TestDefaultsMatchTheAPIServer checks the local copy of the API's
// defaulting against the apiserver's own: each manifest's pod, created
// through the API (dry run), comes back with the spec Source gives it.
func TestDefaultsMatchTheAPIServer(t *testing.T) {
	env := envtest.New(t, "edge")
	client := env.Client
	for name, data := range map[string]string{
		"minimal": "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: busybox}]\n",
		"full": `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  hostNetwork: true
  serviceAccount: ""
  initContainers:
  - {name: init, image: "busybox:1.36", resources: {limits: {memory: 1Gi}}}
  containers:
  - name: c
    image: registry.local/app@sha256:0000000000000000000000000000000000000000000000000000000000000000
    ports: [{containerPort: 8080}, {containerPort: 53, protocol: UDP}]
    env:
    - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
    resources: {limits: {cpu: "0.5", memory: 128Mi}, requests: {cpu: 1m}}
    livenessProbe: {httpGet: {port: 8080}}
    readinessProbe: {grpc: {port: 9090}, periodSeconds: 3}
    startupProbe: {exec: {command: ["true"]}}
    lifecycle: {preStop: {httpGet: {port: 8080}}}
  volumes:
  - {name: scratch}
  - {name: etc, hostPath: {path: /etc}}
  - {name: info, downwardAPI: {items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]}}
  - {name: proj, projected: {sources: [{downwardAPI: {items: [{path: name, fieldRef: {fieldPath: metadata.name}}]}}]}}
  - {name: mem, emptyDir: {medium: Memory}}
`,
	} {
		t.Run(name, func(t *testing.T) {
			raw := &corev1.Pod{}
			if _, _, err := strict.Decode(mustJSON(t, data), nil, raw); err != nil {
				t.Fatal(err)
			}
			raw.Namespace = "edge"
			fromAPI, err := client.CoreV1().Pods("edge").Create(context.Background(), raw.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				t.Fatal(err)
			}
			// Admission, not defaulting, adds these (DefaultTolerationSeconds
			// and Priority); static pods get none of them, as upstream's.
			fromAPI.Spec.Tolerations, fromAPI.Spec.Priority, fromAPI.Spec.PreemptionPolicy = nil, nil, nil
			local := raw.DeepCopy()
			apiDefaults(local)
			if !apiequality.Semantic.DeepEqual(local.Spec, fromAPI.Spec) {
				t.Errorf("local defaults differ from the apiserver's:\nlocal: %s\napi:   %s", mustMarshal(t, local.Spec), mustMarshal(t, fromAPI.Spec))
			}
		})
	}
}

func mustJSON(t *testing.T, data string) []byte {
	t.Helper()
	doc, err := singleDocument([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}
