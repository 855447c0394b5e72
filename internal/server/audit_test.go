package server

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"orch/internal/apiserver/filters"
	"orch/internal/envtest"
)

const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
  resources: [{group: "", resources: ["secrets"]}]
- level: RequestResponse
  resources: [{group: "", resources: ["configmaps"]}]
  namespaces: ["audited"]
- level: None
`

// TestAuditLog is issue 19's acceptance 4: with --audit-policy-file and
// --audit-log-path, every request the policy selects leaves one event per
// stage (audit.k8s.io/v1) with its user, verb, resource and response
// code; Metadata events of Secrets carry none of their data; a refused
// request shows the decision, and an impersonated one both users.
func TestAuditLog(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real server")
	}
	dir := t.TempDir()
	policy, logPath := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "audit.log")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startTestServer(t, noAgent, func(c *Config) {
		c.Audit = filters.AuditConfig{PolicyFile: policy, Path: logPath, MaxSize: 10, MaxBackup: 2}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const secretValue = "value-that-must-not-be-logged"
	envtest.Eventually(t, "the admin can create namespaces", func() (bool, error) {
		_, err := s.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "audited"}}, metav1.CreateOptions{})
		return err == nil, nil
	})
	if _, err := s.admin.CoreV1().Secrets("audited").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"},
		StringData: map[string]string{"password": secretValue}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.admin.CoreV1().ConfigMaps("audited").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"},
		Data: map[string]string{"k": "logged-in-full"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", s.cfg.WriteKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	// A refused credential is audited too, with no user.
	bogus := &rest.Config{Host: rc.Host, TLSClientConfig: rest.TLSClientConfig{CAData: rc.CAData, CAFile: rc.CAFile}, BearerToken: "not-a-token"}
	if _, err := kubernetes.NewForConfigOrDie(bogus).CoreV1().Secrets("audited").Get(ctx, "s", metav1.GetOptions{}); !apierrors.IsUnauthorized(err) {
		t.Fatalf("a bogus token read the Secret: %v", err)
	}
	rc.Impersonate.UserName = "mallory"
	if _, err := kubernetes.NewForConfigOrDie(rc).CoreV1().Secrets("audited").Get(ctx, "s", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("mallory read the Secret: %v", err)
	}

	var events []auditv1.Event
	envtest.Eventually(t, "the audit log has mallory's refused request", func() (bool, error) {
		f, err := os.Open(logPath)
		if err != nil {
			return false, err
		}
		defer f.Close()
		events = nil
		lines := bufio.NewScanner(f)
		lines.Buffer(make([]byte, 1<<20), 1<<20)
		for lines.Scan() {
			if strings.Contains(lines.Text(), secretValue) || strings.Contains(lines.Text(), "dmFsdWUtdGhhdC1tdXN0LW5vdC1iZS1sb2dnZWQ=") {
				t.Fatalf("the audit log holds the Secret's data: %s", lines.Text())
			}
			var ev auditv1.Event
			if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
				t.Fatalf("not an audit event: %v\n%s", err, lines.Text())
			}
			events = append(events, ev)
		}
		for _, ev := range events {
			if ev.ImpersonatedUser != nil && ev.ImpersonatedUser.Username == "mallory" && ev.Stage == auditv1.StageResponseComplete {
				return true, nil
			}
		}
		return false, nil
	})
	find := func(verb, resource, name string, stage auditv1.Stage, impersonated bool) *auditv1.Event {
		for i, ev := range events {
			// A create's name is in its body, which RequestReceived
			// precedes.
			named := ev.ObjectRef != nil && (ev.ObjectRef.Name == name || verb == "create" && stage == auditv1.StageRequestReceived && ev.ObjectRef.Name == "")
			if ev.Verb == verb && named && ev.ObjectRef.Resource == resource && ev.Stage == stage &&
				(ev.ImpersonatedUser != nil) == impersonated {
				return &events[i]
			}
		}
		t.Errorf("no %s event of %s %s/%s", stage, verb, resource, name)
		return nil
	}
	for _, stage := range []auditv1.Stage{auditv1.StageRequestReceived, auditv1.StageResponseComplete} {
		ev := find("create", "secrets", "s", stage, false)
		if ev == nil {
			continue
		}
		if ev.Level != auditv1.LevelMetadata || ev.User.Username == "" || ev.ObjectRef.Namespace != "audited" || ev.RequestObject != nil || ev.ResponseObject != nil {
			t.Errorf("secret create at %s: %+v", stage, ev)
		}
		if stage == auditv1.StageResponseComplete && (ev.ResponseStatus == nil || ev.ResponseStatus.Code != 201) {
			t.Errorf("secret create: response status %+v, want 201", ev.ResponseStatus)
		}
	}
	if ev := find("create", "configmaps", "c", auditv1.StageResponseComplete, false); ev != nil {
		if ev.Level != auditv1.LevelRequestResponse || ev.RequestObject == nil || !strings.Contains(string(ev.RequestObject.Raw), "logged-in-full") ||
			ev.ResponseObject == nil || !strings.Contains(string(ev.ResponseObject.Raw), `"resourceVersion"`) {
			t.Errorf("configmap create at RequestResponse: %+v", ev)
		}
	}
	refused := false
	for _, ev := range events {
		if ev.ResponseStatus != nil && ev.ResponseStatus.Code == 401 {
			refused = ev.User.Username == "" && ev.ObjectRef != nil && ev.ObjectRef.Resource == "secrets" &&
				ev.ResponseStatus.Message == "Authentication failed, attempted: bearer"
			if !refused {
				t.Errorf("the bogus token's event: %+v", ev)
			}
		}
	}
	if !refused {
		t.Error("no event of the request with a bogus token (401)")
	}
	if ev := find("get", "secrets", "s", auditv1.StageResponseComplete, true); ev != nil {
		if ev.ResponseStatus == nil || ev.ResponseStatus.Code != 403 || ev.Annotations["authorization.k8s.io/decision"] != "forbid" ||
			ev.ImpersonatedUser.Username != "mallory" {
			t.Errorf("mallory's get: %+v", ev)
		}
	}
}
