package apiserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/envtest"
)

// PodTolerationRestriction, off by default: a new pod gets its namespace's
// default tolerations (or the cluster's from the admission configuration),
// a pod that is not BestEffort tolerates memory pressure, and tolerations
// outside the namespace's (or cluster's) allow-list are refused, on create
// and on update, with upstream's words.
func TestPodTolerationRestriction(t *testing.T) {
	ctx := testContext(t)
	file := filepath.Join(t.TempDir(), "admission.yaml")
	config := `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodTolerationRestriction
  configuration:
    apiVersion: podtolerationrestriction.admission.k8s.io/v1alpha1
    kind: Configuration
    default:
    - {key: cluster, operator: Exists, effect: NoSchedule}
    whitelist:
    - {key: cluster, operator: Exists}
    - {key: node.kubernetes.io/not-ready, operator: Exists}
    - {key: node.kubernetes.io/unreachable, operator: Exists}
    - {key: node.kubernetes.io/memory-pressure, operator: Exists}
`
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	_, client := newClientWith(t, "", envtest.Options{EnableAdmissionPlugins: []string{"PodTolerationRestriction"}, PodSecurityConfigFile: file})
	mkNS := func(name string, annotations map[string]string) {
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}},
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mkNS("plain", nil)
	mkNS("team", map[string]string{
		"scheduler.alpha.kubernetes.io/defaultTolerations":   `[{"key":"team","operator":"Equal","value":"a","effect":"NoSchedule"}]`,
		"scheduler.alpha.kubernetes.io/tolerationsWhitelist": `[{"key":"team","operator":"Exists"},{"key":"node.kubernetes.io/not-ready","operator":"Exists"},{"key":"node.kubernetes.io/unreachable","operator":"Exists"},{"key":"node.kubernetes.io/memory-pressure","operator":"Exists"}]`,
	})
	mkNS("broken", map[string]string{"scheduler.alpha.kubernetes.io/defaultTolerations": `{"not":"a list"}`})
	burstable := func(name string, extra ...corev1.Toleration) *corev1.Pod {
		p := plainPod(name)
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}
		p.Spec.Tolerations = extra
		return p
	}
	keys := func(p *corev1.Pod) string {
		var out []string
		for _, tol := range p.Spec.Tolerations {
			out = append(out, tol.Key)
		}
		return strings.Join(out, ",")
	}

	defaulted, err := client.CoreV1().Pods("team").Create(ctx, burstable("defaults"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if k := keys(defaulted); k != "node.kubernetes.io/not-ready,node.kubernetes.io/unreachable,team,node.kubernetes.io/memory-pressure" {
		t.Errorf("a burstable pod in a namespace with defaults got tolerations %s", k)
	}
	if got, err := client.CoreV1().Pods("plain").Create(ctx, plainPod("best-effort"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	} else if k := keys(got); k != "node.kubernetes.io/not-ready,node.kubernetes.io/unreachable,cluster" {
		t.Errorf("a BestEffort pod in a namespace without annotations got tolerations %s, want the cluster default and no memory-pressure", k)
	}

	for _, tc := range []struct{ ns, want string }{
		{"team", "pod tolerations (possibly merged with namespace default tolerations) conflict with its namespace whitelist"},
		{"plain", "pod tolerations (possibly merged with namespace default tolerations) conflict with its cluster whitelist"},
		{"broken", "namespace broken has an invalid scheduler.alpha.kubernetes.io/defaultTolerations annotation"},
	} {
		_, err := client.CoreV1().Pods(tc.ns).Create(ctx, burstable("outside", corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpExists}), metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("in %s, a pod tolerating gpu: %v, want 403 %q", tc.ns, err, tc.want)
		}
	}
	// An update is held to the allow-list too.
	defaulted.Spec.Tolerations = append(defaulted.Spec.Tolerations, corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpExists})
	if _, err := client.CoreV1().Pods("team").Update(ctx, defaulted, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "namespace whitelist") {
		t.Errorf("an update adding a toleration outside the allow-list: %v, want 403", err)
	}

	// Off (the default), nothing is added or refused.
	_, off := newClientWith(t, "plain", envtest.Options{PodSecurityConfigFile: file})
	if got, err := off.CoreV1().Pods("plain").Create(ctx, burstable("off", corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpExists}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	} else if k := keys(got); k != "gpu,node.kubernetes.io/not-ready,node.kubernetes.io/unreachable" {
		t.Errorf("with the plugin off a pod got tolerations %s", k)
	}
}
