package apiserver_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"

	"orch/internal/envtest"
)

// debugContainer is what `kubectl debug -it POD --image=IMG --target=app` adds.
func debugContainer(name string) corev1.EphemeralContainer {
	return corev1.EphemeralContainer{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name, Image: "busybox:1", Stdin: true, TTY: true},
		TargetContainerName:      "app",
	}
}

// wantInvalid checks that err is a 422 Invalid whose causes include field
// (with errType, and msg in its message when msg is set).
func wantInvalid(t *testing.T, err error, errType metav1.CauseType, field, msg string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("err = %v, want 422 Invalid", err)
	}
	for _, c := range err.(apierrors.APIStatus).Status().Details.Causes {
		if c.Type == errType && c.Field == field && strings.Contains(c.Message, msg) {
			return
		}
	}
	t.Fatalf("err = %v, want a %s cause on %s", err, errType, field)
}

// TestEphemeralContainers drives pods/ephemeralcontainers as kubectl debug
// and client-go do: only spec.ephemeralContainers changes, ephemeral
// containers are only ever added, and their fields are checked as upstream.
func TestEphemeralContainers(t *testing.T) {
	ctx := testContext(t)
	srv, client := newClient(t, "eph")
	pods := client.CoreV1().Pods("eph")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "setup", Image: "busybox:1"}},
			Containers:     []corev1.Container{{Name: "app", Image: "nginx:1"}},
		},
	}

	// Ephemeral containers cannot come with the pod.
	withDebug := pod.DeepCopy()
	withDebug.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugContainer("debugger")}
	_, err := pods.Create(ctx, withDebug, metav1.CreateOptions{})
	wantInvalid(t, err, metav1.CauseTypeForbidden, "spec.ephemeralContainers", "cannot be set on create")
	if !strings.Contains(err.Error(), "spec.ephemeralContainers: Forbidden: cannot be set on create") {
		t.Errorf("create message = %q", err.Error())
	}
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// GET returns the whole pod.
	got := &corev1.Pod{}
	if err := client.CoreV1().RESTClient().Get().Namespace("eph").Resource("pods").Name("web").SubResource("ephemeralcontainers").Do(ctx).Into(got); err != nil {
		t.Fatal(err)
	}
	if got.Name != "web" || len(got.Spec.Containers) != 1 || got.ResourceVersion != created.ResourceVersion {
		t.Fatalf("GET ephemeralcontainers = %+v", got)
	}

	// client-go's UpdateEphemeralContainers adds one; the rest of the body is ignored.
	got.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugContainer("debugger")}
	got.Labels = map[string]string{"app": "changed"}
	got.Spec.Containers[0].Image = "nginx:2"
	got.Status.Phase = corev1.PodRunning
	updated, err := pods.UpdateEphemeralContainers(ctx, "web", got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Labels["app"] != "web" || updated.Spec.Containers[0].Image != "nginx:1" || updated.Status.Phase != corev1.PodPending {
		t.Errorf("labels %v image %q phase %q changed through ephemeralcontainers", updated.Labels, updated.Spec.Containers[0].Image, updated.Status.Phase)
	}
	if updated.Generation != created.Generation+1 {
		t.Errorf("generation %d, want %d", updated.Generation, created.Generation+1)
	}
	if n := len(updated.Spec.EphemeralContainers); n != 1 {
		t.Fatalf("%d ephemeral containers, want 1", n)
	}
	ec := updated.Spec.EphemeralContainers[0]
	if ec.TerminationMessagePath != corev1.TerminationMessagePathDefault || ec.TerminationMessagePolicy != corev1.TerminationMessageReadFile ||
		ec.ImagePullPolicy != corev1.PullIfNotPresent || ec.TargetContainerName != "app" || !ec.TTY || !ec.Stdin {
		t.Errorf("ephemeral container not defaulted or not kept: %+v", ec)
	}

	// kubectl debug sends a strategic merge patch; JSON and merge patches work too.
	second := debugContainer("debugger-2")
	second.Image = "busybox" // no tag: pulled Always
	patch := fmt.Sprintf(`{"spec":{"ephemeralContainers":[{"name":%q,"image":%q,"targetContainerName":"setup"}]}}`, second.Name, second.Image)
	patched, err := pods.Patch(ctx, "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "ephemeralcontainers")
	if err != nil {
		t.Fatal(err)
	}
	// (Without kubectl's $setElementOrder a strategic merge puts the new item first.)
	if n := len(patched.Spec.EphemeralContainers); n != 2 || patched.Spec.EphemeralContainers[0].ImagePullPolicy != corev1.PullAlways {
		t.Fatalf("after the strategic merge patch: %+v", patched.Spec.EphemeralContainers)
	}
	jsonPatch := `[{"op":"add","path":"/spec/ephemeralContainers/-","value":{"name":"debugger-3","image":"busybox:1"}},{"op":"replace","path":"/metadata/labels/app","value":"ignored"}]`
	if patched, err = pods.Patch(ctx, "web", types.JSONPatchType, []byte(jsonPatch), metav1.PatchOptions{}, "ephemeralcontainers"); err != nil {
		t.Fatal(err)
	}
	if len(patched.Spec.EphemeralContainers) != 3 || patched.Labels["app"] != "web" {
		t.Fatalf("after the JSON patch: labels %v, %d ephemeral containers", patched.Labels, len(patched.Spec.EphemeralContainers))
	}
	mergePatch := `{"spec":{"ephemeralContainers":null}}`
	_, err = pods.Patch(ctx, "web", types.MergePatchType, []byte(mergePatch), metav1.PatchOptions{}, "ephemeralcontainers")
	wantInvalid(t, err, metav1.CauseTypeForbidden, "spec.ephemeralContainers", `existing ephemeral containers "debugger" may not be removed`)

	// Existing ones may not change.
	current, err := pods.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	changed := current.DeepCopy()
	for i := range changed.Spec.EphemeralContainers {
		if c := &changed.Spec.EphemeralContainers[i]; c.Name == "debugger" {
			c.Image = "busybox:2"
		}
	}
	_, err = pods.UpdateEphemeralContainers(ctx, "web", changed, metav1.UpdateOptions{})
	wantInvalid(t, err, metav1.CauseTypeForbidden, "spec.ephemeralContainers", `existing ephemeral containers "debugger" may not be changed`)

	// A regular update cannot touch them (nor add one).
	changed = current.DeepCopy()
	changed.Spec.EphemeralContainers = append(changed.Spec.EphemeralContainers, debugContainer("sneaky"))
	_, err = pods.Update(ctx, changed, metav1.UpdateOptions{})
	wantInvalid(t, err, metav1.CauseTypeForbidden, "spec", "pod updates may not change fields")

	// Each new container is validated as upstream's validateEphemeralContainers.
	for _, tc := range []struct {
		name    string
		mutate  func(*corev1.EphemeralContainer)
		errType metav1.CauseType
		field   string
	}{
		{"bad target", func(c *corev1.EphemeralContainer) { c.TargetContainerName = "nope" }, metav1.CauseTypeFieldValueNotFound, "targetContainerName"},
		{"ephemeral target", func(c *corev1.EphemeralContainer) { c.TargetContainerName = "debugger" }, metav1.CauseTypeFieldValueNotFound, "targetContainerName"},
		{"name of a container", func(c *corev1.EphemeralContainer) { c.Name = "app" }, metav1.CauseTypeFieldValueDuplicate, "name"},
		{"name of an init container", func(c *corev1.EphemeralContainer) { c.Name = "setup" }, metav1.CauseTypeFieldValueDuplicate, "name"},
		{"no name", func(c *corev1.EphemeralContainer) { c.Name = "" }, metav1.CauseTypeFieldValueRequired, "name"},
		{"no image", func(c *corev1.EphemeralContainer) { c.Image = "" }, metav1.CauseTypeFieldValueRequired, "image"},
		{"ports", func(c *corev1.EphemeralContainer) { c.Ports = []corev1.ContainerPort{{ContainerPort: 80}} }, metav1.CauseTypeForbidden, "ports"},
		{"livenessProbe", func(c *corev1.EphemeralContainer) { c.LivenessProbe = execProbe() }, metav1.CauseTypeForbidden, "livenessProbe"},
		{"readinessProbe", func(c *corev1.EphemeralContainer) { c.ReadinessProbe = execProbe() }, metav1.CauseTypeForbidden, "readinessProbe"},
		{"startupProbe", func(c *corev1.EphemeralContainer) { c.StartupProbe = execProbe() }, metav1.CauseTypeForbidden, "startupProbe"},
		{"lifecycle", func(c *corev1.EphemeralContainer) {
			c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
		}, metav1.CauseTypeForbidden, "lifecycle"},
		{"resources", func(c *corev1.EphemeralContainer) {
			c.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		}, metav1.CauseTypeForbidden, "resources"},
		{"resizePolicy", func(c *corev1.EphemeralContainer) {
			c.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired}}
		}, metav1.CauseTypeForbidden, "resizePolicy"},
		{"restartPolicy", func(c *corev1.EphemeralContainer) { c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways) }, metav1.CauseTypeForbidden, "restartPolicy"},
		{"subPath", func(c *corev1.EphemeralContainer) {
			c.VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/v", SubPath: "x"}}
		}, metav1.CauseTypeForbidden, "volumeMounts[0].subPath"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := current.DeepCopy()
			c := debugContainer("new")
			tc.mutate(&c)
			pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, c)
			_, err := pods.UpdateEphemeralContainers(ctx, "web", pod, metav1.UpdateOptions{})
			wantInvalid(t, err, tc.errType, "spec.ephemeralContainers[3]."+tc.field, "")
		})
	}

	// Pods that do not exist are 404 with the pod's name (kubectl debug
	// tells that from a server without the subresource by the name).
	_, err = pods.Patch(ctx, "nope", types.StrategicMergePatchType, []byte(`{}`), metav1.PatchOptions{}, "ephemeralcontainers")
	if !apierrors.IsNotFound(err) || err.(apierrors.APIStatus).Status().Details == nil || err.(apierrors.APIStatus).Status().Details.Name != "nope" {
		t.Errorf("patch of a missing pod: %v, want 404 naming the pod", err)
	}
	err = client.CoreV1().RESTClient().Get().Namespace("eph").Resource("pods").Name("nope").SubResource("ephemeralcontainers").Do(ctx).Error()
	if !apierrors.IsNotFound(err) {
		t.Errorf("get of a missing pod: %v, want 404", err)
	}

	// Discovery lists the subresource with the verbs kubectl needs.
	_, lists, err := discovery.NewDiscoveryClientForConfigOrDie(srv.Config).ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, list := range lists {
		for _, r := range list.APIResources {
			if list.GroupVersion == "v1" && r.Name == "pods/ephemeralcontainers" {
				found = r.Kind == "Pod" && fmt.Sprint(r.Verbs) == "[get patch update]"
			}
		}
	}
	if !found {
		t.Error("discovery does not list v1 pods/ephemeralcontainers (Pod; get, patch, update)")
	}

	// The real kubectl debug (without attaching: no kubelet runs here).
	envtest.KubectlContains(t, srv.Config, `Targeting container "app"`, "debug", "web", "-n", "eph", "--image=busybox:1", "--target=app", "--container=kdebug")
	after, err := pods.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, c := range after.Spec.EphemeralContainers {
		names = append(names, c.Name+"→"+c.TargetContainerName)
	}
	if !strings.Contains(strings.Join(names, " "), "kdebug→app") {
		t.Errorf("after kubectl debug: ephemeral containers %v, want kdebug targeting app", names)
	}
}

func execProbe() *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
}
