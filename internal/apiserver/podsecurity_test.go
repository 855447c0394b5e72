package apiserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"orch/internal/envtest"
)

// warnedClient is a client of srv whose warnings are recorded.
func warnedClient(t *testing.T, srv *envtest.Server) (kubernetes.Interface, *warningRecorder) {
	w := &warningRecorder{}
	return kubernetes.NewForConfigOrDie(withWarnings(srv.Config, w)), w
}

func plainPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
}

// A namespace's pod-security.kubernetes.io labels are enforced and warned
// about as upstream's PodSecurity admission does, with its words.
func TestPodSecurityLabels(t *testing.T) {
	srv, _ := newClient(t, "")
	client, warned := warnedClient(t, srv)
	ctx := testContext(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "psa", Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/warn": "restricted"}}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	privileged := plainPod("privileged")
	privileged.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	_, err := client.CoreV1().Pods("psa").Create(ctx, privileged, metav1.CreateOptions{})
	if want := `pods "privileged" is forbidden: violates PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)`; !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("privileged pod: %v\nwant: %s", err, want)
	}
	hostPath := plainPod("hostpath")
	hostPath.Spec.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
	_, err = client.CoreV1().Pods("psa").Create(ctx, hostPath, metav1.CreateOptions{})
	if want := `violates PodSecurity "baseline:latest": hostPath volumes (volume "root")`; !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("hostPath pod: %v\nwant: %s", err, want)
	}
	warned.take()

	if _, err := client.CoreV1().Pods("psa").Create(ctx, plainPod("plain"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a plain pod is refused: %v", err)
	}
	if got, want := warned.take(), `would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false`; !strings.Contains(got, want) {
		t.Errorf("warnings %q, want one containing %q", got, want)
	}

	// A pod controller's template is warned about, not refused.
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "d"}}, Spec: privileged.Spec}}}
	if _, err := client.AppsV1().Deployments("psa").Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a deployment with a privileged template is refused: %v", err)
	}
	if got, want := warned.take(), `would violate PodSecurity "restricted:latest": privileged (container "c" must not set securityContext.privileged=true)`; !strings.Contains(got, want) {
		t.Errorf("warnings %q, want one containing %q", got, want)
	}

	// Tightening enforce warns about the pods that already violate it.
	ns, err = client.CoreV1().Namespaces().Get(ctx, "psa", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	if _, err := client.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, want := warned.take(), `existing pods in namespace "psa" violate the new PodSecurity enforce level "restricted:latest"`; !strings.Contains(got, want) {
		t.Errorf("warnings %q, want one containing %q", got, want)
	}

	// A level that does not exist is refused.
	bad := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bad", Labels: map[string]string{"pod-security.kubernetes.io/enforce": "strict"}}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
		t.Errorf("a namespace with enforce=strict: %v, want it refused", err)
	}
}

// The cluster default and exemptions come from the config file, as k3s's
// --pod-security-admission-config-file gives them; disabling the plugin
// turns all of it off.
func TestPodSecurityConfigFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "psa.yaml")
	if err := os.WriteFile(file, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults:
      enforce: baseline
      enforce-version: latest
    exemptions:
      namespaces: [exempt]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	privileged := plainPod("privileged")
	privileged.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}

	_, client := newClientWith(t, "plain", envtest.Options{PodSecurityConfigFile: file})
	ctx := testContext(t)
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "exempt"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods("plain").Create(ctx, privileged, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("a privileged pod in an unlabelled namespace under a baseline default: %v, want Forbidden", err)
	}
	if _, err := client.CoreV1().Pods("exempt").Create(ctx, privileged, metav1.CreateOptions{}); err != nil {
		t.Errorf("a privileged pod in an exempt namespace: %v", err)
	}

	_, off := newClientWith(t, "plain", envtest.Options{PodSecurityConfigFile: file, DisableAdmissionPlugins: []string{"PodSecurity"}})
	if _, err := off.CoreV1().Pods("plain").Create(ctx, privileged, metav1.CreateOptions{}); err != nil {
		t.Errorf("with PodSecurity disabled: %v", err)
	}
}
