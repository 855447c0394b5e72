package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/pki"
)

// admissionHookRef is the image of the webhook server (testdata/admissionhook).
const admissionHookRef = "orch.test/admissionhook:1"

// TestWebhooksInPods is issue 17's acceptance items 3 and 4 with the
// webhooks where users run them: a validating and a mutating admission
// webhook and a CRD's conversion webhook, all served by a pod behind a
// Service, called over TLS checked against their caBundle. They refuse,
// change and convert objects; with the pod gone, failurePolicy Fail
// refuses writes and Ignore lets them through.
func TestWebhooksInPods(t *testing.T) {
	built := make(chan testProgram, 1)
	binDir := t.TempDir()
	go func() { built <- buildTestProgram(binDir, "admissionhook") }()
	s := StartServerWithAgent(t)
	client := s.client(t)
	waitNodeReady(t, client, "e2e-server")
	if err := writeProgramImage(<-built, admissionHookRef, filepath.Join(s.Dir, "agent", "images", "admissionhook.tar")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// The webhook's serving certificate names its Service.
	certs, err := pki.Ensure(pki.Config{Dir: t.TempDir(), Hostname: "admission-hook", ExtraSANs: []string{"admission-hook.hooks.svc"}})
	if err != nil {
		t.Fatal(err)
	}
	s.KubectlIn(t, fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: hooks}
---
apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: v1
kind: Secret
metadata: {name: admission-hook-tls, namespace: hooks}
type: kubernetes.io/tls
stringData:
  tls.crt: |
%s
  tls.key: |
%s
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: admission-hook, namespace: hooks}
spec:
  replicas: 1
  selector: {matchLabels: {app: admission-hook}}
  template:
    metadata: {labels: {app: admission-hook}}
    spec:
      containers:
      - name: hook
        image: %s
        imagePullPolicy: Never
        args: [/tls/tls.crt, /tls/tls.key]
        ports: [{containerPort: 8443}]
        readinessProbe: {httpGet: {path: /readyz, port: 8443, scheme: HTTPS}, periodSeconds: 1}
        volumeMounts: [{name: tls, mountPath: /tls}]
      volumes: [{name: tls, secret: {secretName: admission-hook-tls}}]
---
apiVersion: v1
kind: Service
metadata: {name: admission-hook, namespace: hooks}
spec:
  selector: {app: admission-hook}
  ports: [{port: 443, targetPort: 8443}]
`, indent(string(certs.ServingCertPEM)), indent(string(certs.ServingKeyPEM)), admissionHookRef), "apply", "-f", "-")
	s.Kubectl(t, "-n", "hooks", "rollout", "status", "deployment/admission-hook", "--timeout=120s")

	hook := func(kind, name, path, failurePolicy string) string {
		return fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: %s
metadata: {name: %s}
webhooks:
- name: %s.orch.test
  clientConfig:
    service: {namespace: hooks, name: admission-hook, path: %s}
    caBundle: %s
  rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: team}}
  failurePolicy: %s
  sideEffects: None
  admissionReviewVersions: [v1]
`, kind, name, name, path, base64.StdEncoding.EncodeToString(certs.CACertPEM), failurePolicy)
	}
	s.KubectlIn(t, hook("ValidatingWebhookConfiguration", "refuse", "/validate", "Fail")+"---\n"+
		hook("MutatingWebhookConfiguration", "label", "/mutate", "Fail"), "apply", "-f", "-")

	configMap := func(name string, labels map[string]string) (*corev1.ConfigMap, error) {
		return client.CoreV1().ConfigMaps("team").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
	}
	eventually(t, time.Minute, func() string {
		_, err := configMap("bad", map[string]string{"deny": "yes"})
		if err == nil {
			client.CoreV1().ConfigMaps("team").Delete(ctx, "bad", metav1.DeleteOptions{})
			return "a configmap labelled deny=yes was created"
		}
		if want := `admission webhook "refuse.orch.test" denied the request: ConfigMap bad is refused by the webhook pod`; !strings.Contains(err.Error(), want) {
			return fmt.Sprintf("refusal %q, want %q", err, want)
		}
		return ""
	})
	cm, err := configMap("good", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cm.Labels["mutated"] != "yes" {
		t.Errorf("created configmap labels %v, want mutated=yes from the mutating webhook", cm.Labels)
	}

	// A CRD whose versions a webhook in the pod converts.
	s.KubectlIn(t, fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: paints.conv.orch.test}
spec:
  group: conv.orch.test
  scope: Namespaced
  names: {plural: paints, singular: paint, kind: Paint, listKind: PaintList}
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig:
        service: {namespace: hooks, name: admission-hook, path: /convert}
        caBundle: %s
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {color: {type: string}}}}}}
  - name: v2
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {paint: {type: object, properties: {color: {type: string}}}}}}}}
`, base64.StdEncoding.EncodeToString(certs.CACertPEM)), "apply", "-f", "-")
	s.Kubectl(t, "wait", "--for=condition=Established", "crd/paints.conv.orch.test", "--timeout=30s")
	s.KubectlIn(t, "apiVersion: conv.orch.test/v1\nkind: Paint\nmetadata: {name: red, namespace: team}\nspec: {color: red}\n", "apply", "-f", "-")
	s.KubectlIn(t, "apiVersion: conv.orch.test/v2\nkind: Paint\nmetadata: {name: blue, namespace: team}\nspec: {paint: {color: blue}}\n", "apply", "-f", "-")
	for _, c := range []struct{ resource, name, path, want string }{
		{"paints.v2.conv.orch.test", "red", "{.apiVersion} {.spec.paint.color}", "conv.orch.test/v2 red"},
		{"paints.v1.conv.orch.test", "blue", "{.apiVersion} {.spec.color}", "conv.orch.test/v1 blue"},
		{"paints.v2.conv.orch.test", "blue", "{.apiVersion} {.spec.paint.color}", "conv.orch.test/v2 blue"},
	} {
		if got := s.Kubectl(t, "-n", "team", "get", c.resource, c.name, "-o", "jsonpath="+c.path); got != c.want {
			t.Errorf("kubectl get %s %s: %q, want %q", c.resource, c.name, got, c.want)
		}
	}

	// The webhook pod gone: Fail refuses the writes it would see …
	s.Kubectl(t, "-n", "hooks", "scale", "deployment/admission-hook", "--replicas=0")
	eventually(t, time.Minute, func() string {
		_, err := configMap("while-down", nil)
		if err == nil {
			client.CoreV1().ConfigMaps("team").Delete(ctx, "while-down", metav1.DeleteOptions{})
			return "a configmap was created with the webhook down and failurePolicy Fail"
		}
		if !strings.Contains(err.Error(), `failed calling webhook`) {
			return fmt.Sprintf("refusal %q, want one that names the failed call", err)
		}
		return ""
	})
	// … and Ignore lets them through unchanged.
	s.KubectlIn(t, hook("ValidatingWebhookConfiguration", "refuse", "/validate", "Ignore")+"---\n"+
		hook("MutatingWebhookConfiguration", "label", "/mutate", "Ignore"), "apply", "-f", "-")
	eventually(t, time.Minute, func() string {
		cm, err := configMap("ignored", map[string]string{"deny": "yes"})
		if err != nil {
			return err.Error()
		}
		if cm.Labels["mutated"] != "" {
			return "the webhook that is down mutated the configmap"
		}
		return ""
	})
}

// indent indents each line of text by four spaces (a YAML block scalar
// under a key indented by two).
func indent(text string) string {
	return "    " + strings.ReplaceAll(strings.TrimSpace(text), "\n", "\n    ")
}
