package apiserver_test

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"orch/internal/envtest"
)

// admissionWebhook serves AdmissionReview v1 at /validate and /mutate:
// it refuses objects labelled deny=yes, deletes of objects labelled
// keep=yes and every connect, and adds the label mutated=yes. calls counts the requests.
type admissionWebhook struct {
	*httptest.Server
	calls atomic.Int32
}

func newAdmissionWebhook(t *testing.T) *admissionWebhook {
	h := &admissionWebhook{}
	h.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.calls.Add(1)
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req := review.Request
		resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
		var obj metav1.PartialObjectMetadata
		raw := req.Object.Raw
		if req.Operation == admissionv1.Delete {
			raw = req.OldObject.Raw
		}
		if err := json.Unmarshal(raw, &obj); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		switch r.URL.Path {
		case "/validate":
			if obj.Labels["deny"] == "yes" || (req.Operation == admissionv1.Delete && obj.Labels["keep"] == "yes") || req.Operation == admissionv1.Connect {
				resp.Allowed = false
				resp.Result = &metav1.Status{Code: http.StatusForbidden, Message: fmt.Sprintf("%s %s is not welcome", req.Kind.Kind, req.Name)}
			}
			resp.Warnings = []string{"seen by the validating webhook"}
		case "/mutate":
			patch := `[{"op":"add","path":"/metadata/labels","value":{"mutated":"yes"}}]`
			if len(obj.Labels) > 0 {
				patch = `[{"op":"add","path":"/metadata/labels/mutated","value":"yes"}]`
			}
			if req.Kind.Kind == "Widget" {
				// A field the CRD's schema does not have: pruned.
				patch = patch[:len(patch)-1] + `,{"op":"add","path":"/spec/stray","value":"x"}]`
			}
			pt := admissionv1.PatchTypeJSONPatch
			resp.Patch, resp.PatchType = []byte(patch), &pt
		}
		review.Response, review.Request = resp, nil
		json.NewEncoder(w).Encode(&review)
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *admissionWebhook) clientConfig(path string) admissionregistrationv1.WebhookClientConfig {
	return webhookClientConfig(h.Server, path)
}

// webhookClientConfig calls srv at path, trusting its certificate.
func webhookClientConfig(srv *httptest.Server, path string) admissionregistrationv1.WebhookClientConfig {
	url := srv.URL + path
	return admissionregistrationv1.WebhookClientConfig{URL: &url,
		CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})}
}

// configMapRules match every write of ConfigMaps.
var configMapRules = []admissionregistrationv1.RuleWithOperations{{
	Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll},
	Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
}}

// labelledConfigMap is a ConfigMap named name (generated when empty).
func labelledConfigMap(name string, labels map[string]string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if name == "" {
		cm.GenerateName = "cm-"
	}
	return cm
}

// awaitRefusal creates cm until the apiserver refuses it (admission
// follows its configuration through a watch) and returns the error.
func awaitRefusal(t *testing.T, client kubernetes.Interface, ns string, cm *corev1.ConfigMap) error {
	t.Helper()
	var refused error
	envtest.Eventually(t, "a configmap to be refused", func() (bool, error) {
		created, err := client.CoreV1().ConfigMaps(ns).Create(testContext(t), cm.DeepCopy(), metav1.CreateOptions{})
		if err == nil {
			return false, client.CoreV1().ConfigMaps(ns).Delete(testContext(t), created.Name, metav1.DeleteOptions{})
		}
		refused = err
		return true, nil
	})
	return refused
}

// TestValidatingWebhook: a webhook refuses creates and deletes with
// upstream's wording; its warnings reach the client; a webhook that is
// down fails open or closed as its failurePolicy says.
func TestValidatingWebhook(t *testing.T) {
	srv, client := newClient(t, "team")
	ctx := testContext(t)
	hook := newAdmissionWebhook(t)
	none := admissionregistrationv1.SideEffectClassNone
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "deny"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "deny.orch.test", ClientConfig: hook.clientConfig("/validate"), Rules: configMapRules,
			SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "team"}},
		}, {
			Name: "no-proxy.orch.test", ClientConfig: hook.clientConfig("/validate"), SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Connect},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"services/proxy"}},
			}},
		}}}
	if _, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := awaitRefusal(t, client, "team", labelledConfigMap("bad", map[string]string{"deny": "yes"}))
	want := `admission webhook "deny.orch.test" denied the request: ConfigMap bad is not welcome`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("refusal = %v, want a Forbidden %q", err, want)
	}

	// Connects are admitted with their options (before the service is
	// looked up).
	err = client.CoreV1().RESTClient().Get().Namespace("team").Resource("services").Name("web:80").SubResource("proxy").Do(ctx).Error()
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `admission webhook "no-proxy.orch.test" denied the request: ServiceProxyOptions web:80 is not welcome`) {
		t.Errorf("services/proxy = %v, want Forbidden by the webhook", err)
	}

	// Allowed writes carry the webhook's warnings.
	var warnings warningRecorder
	warned := kubernetes.NewForConfigOrDie(withWarnings(srv.Config, &warnings))
	if _, err := warned.CoreV1().ConfigMaps("team").Create(ctx, labelledConfigMap("keep", map[string]string{"keep": "yes"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := warnings.all(); !strings.Contains(got, "seen by the validating webhook") {
		t.Errorf("warnings = %q, want the webhook's", got)
	}
	// Deletes are admitted too (the old object is shown).
	err = client.CoreV1().ConfigMaps("team").Delete(ctx, "keep", metav1.DeleteOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "ConfigMap keep is not welcome") {
		t.Errorf("delete of a kept configmap = %v, want Forbidden by the webhook", err)
	}
	// Outside the namespace selector the webhook is not asked.
	envtest.Create(t, client.CoreV1().Namespaces().Create, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}})
	before := hook.calls.Load()
	if _, err := client.CoreV1().ConfigMaps("other").Create(ctx, labelledConfigMap("elsewhere", map[string]string{"deny": "yes"}), metav1.CreateOptions{}); err != nil {
		t.Errorf("a configmap outside the selected namespaces: %v", err)
	}
	if hook.calls.Load() != before {
		t.Error("the webhook was called for a namespace its selector excludes")
	}

	// The webhook goes away: Fail refuses, Ignore lets writes through.
	hook.Close()
	err = awaitRefusal(t, client, "team", labelledConfigMap("while-down", nil))
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), `failed calling webhook "deny.orch.test"`) {
		t.Errorf("with the webhook down and failurePolicy Fail: %v, want an internal error naming the webhook", err)
	}
	envtest.Update(t, "deny", client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get,
		client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update, func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
		})
	envtest.Eventually(t, "failurePolicy Ignore to let writes through", func() (bool, error) {
		_, err := client.CoreV1().ConfigMaps("team").Create(ctx, labelledConfigMap("ignored", nil), metav1.CreateOptions{})
		return err == nil, nil
	})
}

// TestMutatingWebhook: a webhook's JSON patch is applied to built-in and
// custom resources, on create and update, and only where its match
// condition (CEL) holds.
func TestMutatingWebhook(t *testing.T) {
	srv, client := newClient(t, "team")
	ctx := testContext(t)
	hook := newAdmissionWebhook(t)
	none := admissionregistrationv1.SideEffectClassNone
	rules := append([]admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"example.com"}, APIVersions: []string{"*"}, Resources: []string{"widgets"}},
	}}, configMapRules...)
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "label"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "label.orch.test", ClientConfig: hook.clientConfig("/mutate"), Rules: rules,
			SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "not-plain", Expression: `!object.metadata.name.startsWith("plain")`}},
		}}}
	if _, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var created *corev1.ConfigMap
	envtest.Eventually(t, "the webhook to label configmaps", func() (bool, error) {
		cm, err := client.CoreV1().ConfigMaps("team").Create(ctx, labelledConfigMap("", map[string]string{"a": "b"}), metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		created = cm
		return cm.Labels["mutated"] == "yes", nil
	})
	if created.Labels["a"] != "b" {
		t.Errorf("labels = %v, want the client's kept", created.Labels)
	}
	stored := envtest.Get(t, client.CoreV1().ConfigMaps("team").Get, created.Name)
	if stored.Labels["mutated"] != "yes" {
		t.Errorf("stored labels = %v, want the webhook's", stored.Labels)
	}
	// Updates are mutated as well: the label comes back.
	envtest.Update(t, created.Name, client.CoreV1().ConfigMaps("team").Get, client.CoreV1().ConfigMaps("team").Update,
		func(cm *corev1.ConfigMap) { cm.Labels = map[string]string{"a": "c"} })
	updated := envtest.Get(t, client.CoreV1().ConfigMaps("team").Get, created.Name)
	if updated.Labels["mutated"] != "yes" || updated.Labels["a"] != "c" {
		t.Errorf("labels after update = %v, want a=c and mutated=yes", updated.Labels)
	}
	// The match condition leaves plain-* alone.
	plain, err := client.CoreV1().ConfigMaps("team").Create(ctx, labelledConfigMap("plain-1", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := plain.Labels["mutated"]; ok {
		t.Errorf("plain-1 was mutated although its match condition is false: %v", plain.Labels)
	}

	// Custom resources are mutated as unstructured objects.
	establish(t, srv.Config, widgetCRD(), widgets)
	w, err := dynamic.NewForConfigOrDie(srv.Config).Resource(widgets).Namespace("team").Create(ctx, widget("w", map[string]any{"color": "red"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if w.GetLabels()["mutated"] != "yes" {
		t.Errorf("widget labels = %v, want the webhook's", w.GetLabels())
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(w.Object, "spec", "stray"); found {
		t.Errorf("widget spec = %v, want the field the schema lacks pruned", w.Object["spec"])
	}
}

// TestValidatingAdmissionPolicy: a policy bound with Deny refuses a
// Deployment with more than 3 replicas with upstream's message; Warn
// only warns.
func TestValidatingAdmissionPolicy(t *testing.T) {
	srv, client := newClient(t, "team")
	ctx := testContext(t)
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "max-replicas"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
				}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.spec.replicas <= 3",
				MessageExpression: `"replicas must be at most 3, not " + string(object.spec.replicas)`}},
		}}
	if _, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "max-replicas-binding"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "max-replicas",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
	if _, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deployment := func(name string, replicas int32) *appsv1.Deployment {
		labels := map[string]string{"app": name}
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.DeploymentSpec{Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	}
	var refused error
	envtest.Eventually(t, "the policy to refuse 5 replicas", func() (bool, error) {
		_, err := client.AppsV1().Deployments("team").Create(ctx, deployment("big", 5), metav1.CreateOptions{})
		if err == nil {
			return false, client.AppsV1().Deployments("team").Delete(ctx, "big", metav1.DeleteOptions{})
		}
		refused = err
		return true, nil
	})
	want := "deployments.apps \"big\" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: replicas must be at most 3, not 5"
	if !apierrors.IsInvalid(refused) && !apierrors.IsForbidden(refused) || refused.Error() != want {
		t.Errorf("refusal = %v, want %q", refused, want)
	}
	if _, err := client.AppsV1().Deployments("team").Create(ctx, deployment("small", 3), metav1.CreateOptions{}); err != nil {
		t.Errorf("3 replicas: %v", err)
	}

	// Warn instead of Deny: the write succeeds with the message as a warning.
	envtest.Update(t, "max-replicas-binding", client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get,
		client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Update, func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}
		})
	var warnings warningRecorder
	warned := kubernetes.NewForConfigOrDie(withWarnings(srv.Config, &warnings))
	envtest.Eventually(t, "the Warn binding to let 5 replicas through", func() (bool, error) {
		_, err := warned.AppsV1().Deployments("team").Create(ctx, deployment("warned", 5), metav1.CreateOptions{})
		return err == nil, nil
	})
	if got := warnings.all(); !strings.Contains(got, "replicas must be at most 3, not 5") {
		t.Errorf("warnings = %q, want the policy's message", got)
	}
}

// TestMutatingAdmissionPolicy: a policy's apply configuration sets a
// label on every new ConfigMap.
func TestMutatingAdmissionPolicy(t *testing.T) {
	_, client := newClient(t, "team")
	ctx := testContext(t)
	policy := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "owner"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			FailurePolicy:      ptr.To(admissionregistrationv1.Fail),
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				}}}},
			Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{
					Expression: `Object{metadata: Object.metadata{labels: {"owner": "platform"}}}`}}},
		}}
	if _, err := client.AdmissionregistrationV1().MutatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "owner"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "owner"}}
	if _, err := client.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "the policy to label configmaps", func() (bool, error) {
		cm, err := client.CoreV1().ConfigMaps("team").Create(ctx, labelledConfigMap("", nil), metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		return cm.Labels["owner"] == "platform", nil
	})
}

// warningRecorder keeps the warnings a client was sent.
type warningRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, text)
}

func (w *warningRecorder) all() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.msgs, "\n")
}

// take is all the warnings so far, which it forgets.
func (w *warningRecorder) take() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	all := strings.Join(w.msgs, "\n")
	w.msgs = nil
	return all
}

func withWarnings(c *rest.Config, w *warningRecorder) *rest.Config {
	c = rest.CopyConfig(c)
	c.WarningHandler = w
	return c
}

// recordingWebhook serves AdmissionReview v1: it records each request as
// "OPERATION resource[/subresource] Kind name", allows it, and at /mutate
// sets a Scale's spec.replicas to 3.
type recordingWebhook struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newRecordingWebhook(t *testing.T) *recordingWebhook {
	h := &recordingWebhook{}
	h.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req := review.Request
		resource := req.Resource.Resource
		if req.SubResource != "" {
			resource += "/" + req.SubResource
		}
		resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
		if r.URL.Path == "/mutate" && req.Kind.Kind == "Scale" {
			pt := admissionv1.PatchTypeJSONPatch
			resp.Patch, resp.PatchType = []byte(`[{"op":"replace","path":"/spec/replicas","value":3}]`), &pt
		} else {
			h.mu.Lock()
			h.seen = append(h.seen, fmt.Sprintf("%s %s %s %s", req.Operation, resource, req.Kind.Kind, req.Name))
			h.mu.Unlock()
		}
		review.Response, review.Request = resp, nil
		json.NewEncoder(w).Encode(&review)
	}))
	t.Cleanup(h.Close)
	return h
}

// take returns what was recorded since the last call.
func (h *recordingWebhook) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := h.seen
	h.seen = nil
	return seen
}

// TestWebhookSubresources: subresources that take another kind are
// admitted as that kind (a Scale, a Binding, an Eviction), and the writes
// the server makes to carry them out are not shown to webhooks again, as
// upstream.
func TestWebhookSubresources(t *testing.T) {
	_, client := newClient(t, "team")
	ctx := testContext(t)
	hook := newRecordingWebhook(t)
	none := admissionregistrationv1.SideEffectClassNone
	rules := func(group string, resources ...string) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: resources},
		}}
	}
	envtest.Create(t, client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "record"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "apps.orch.test", ClientConfig: webhookClientConfig(hook.Server, "/validate"), SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			Rules: rules("apps", "deployments", "deployments/scale"),
		}, {
			Name: "pods.orch.test", ClientConfig: webhookClientConfig(hook.Server, "/validate"), SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			Rules: rules("", "pods", "pods/binding", "pods/eviction", "pods/status"),
		}}})
	envtest.Create(t, client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "three"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "three.orch.test", ClientConfig: webhookClientConfig(hook.Server, "/mutate"), SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			Rules: rules("apps", "deployments/scale"),
		}}})
	labels := map[string]string{"app": "web"}
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}}}
	envtest.Eventually(t, "the webhooks to be called", func() (bool, error) {
		if _, err := client.AppsV1().Deployments("team").Create(ctx, deployment.DeepCopy(), metav1.CreateOptions{}); err != nil {
			return false, err
		}
		return len(hook.take()) > 0, nil
	})

	deployment.Name, deployment.GenerateName = "web", ""
	envtest.Create(t, client.AppsV1().Deployments("team").Create, deployment)
	hook.take()
	scale, err := client.AppsV1().Deployments("team").GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 5
	if scale, err = client.AppsV1().Deployments("team").UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if scale.Spec.Replicas != 3 {
		t.Errorf("scaled to %d, want the mutating webhook's 3", scale.Spec.Replicas)
	}
	if got, want := hook.take(), []string{"UPDATE deployments/scale Scale web"}; !slices.Equal(got, want) {
		t.Errorf("a scale was admitted as %q, want %q", got, want)
	}

	pod := envtest.Create(t, client.CoreV1().Pods("team").Create, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}})
	hook.take()
	err = client.CoreV1().Pods("team").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name},
		Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := hook.take(), []string{"CREATE pods/binding Binding p"}; !slices.Equal(got, want) {
		t.Errorf("a binding was admitted as %q, want %q", got, want)
	}
	err = client.PolicyV1().Evictions("team").Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: "team"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := hook.take(), []string{"CREATE pods/eviction Eviction p"}; !slices.Equal(got, want) {
		t.Errorf("an eviction was admitted as %q, want %q", got, want)
	}
}
