package validatingwebhookconfigurations

import (
	"reflect"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

type want = registrytest.Want

// config is a valid configuration with one webhook on pod creation,
// written as a user would (nothing defaulted).
func config() *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "checks"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "pods.checks.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "checks", Name: "webhook"}},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
			}},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
}

func TestResource(t *testing.T) {
	r := Resource()
	if r.GroupVersion.String() != "admissionregistration.k8s.io/v1" || r.Resource != "validatingwebhookconfigurations" ||
		r.Kind != "ValidatingWebhookConfiguration" || r.SingularName != "validatingwebhookconfiguration" || r.Namespaced || r.HasStatus {
		t.Errorf("names: %+v", r)
	}
	if r.ShortNames != nil || !reflect.DeepEqual(r.Categories, []string{"api-extensions"}) {
		t.Errorf("short names %v, categories %v", r.ShortNames, r.Categories)
	}
	if _, ok := r.New().(*admissionregistrationv1.ValidatingWebhookConfiguration); !ok {
		t.Errorf("New() = %T", r.New())
	}
	if _, ok := r.NewList().(*admissionregistrationv1.ValidatingWebhookConfigurationList); !ok {
		t.Errorf("NewList() = %T", r.NewList())
	}
}

func TestDefault(t *testing.T) {
	c := config()
	Resource().Default(c)
	w := c.Webhooks[0]
	if *w.FailurePolicy != admissionregistrationv1.Fail || *w.MatchPolicy != admissionregistrationv1.Equivalent || *w.TimeoutSeconds != 10 ||
		!reflect.DeepEqual(w.NamespaceSelector, &metav1.LabelSelector{}) || !reflect.DeepEqual(w.ObjectSelector, &metav1.LabelSelector{}) {
		t.Errorf("defaults: %+v", w)
	}
	if *w.ClientConfig.Service.Port != 443 || *w.Rules[0].Scope != admissionregistrationv1.AllScopes {
		t.Errorf("port %d, scope %s", *w.ClientConfig.Service.Port, *w.Rules[0].Scope)
	}

	c = config()
	c.Webhooks[0].SideEffects = nil
	c.Webhooks[0].FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
	c.Webhooks[0].TimeoutSeconds = ptr.To[int32](3)
	Resource().Default(c)
	if w := c.Webhooks[0]; w.SideEffects != nil || *w.FailurePolicy != admissionregistrationv1.Ignore || *w.TimeoutSeconds != 3 {
		t.Errorf("sideEffects has no default, values set are kept: %+v", w)
	}
}

func TestCreate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*admissionregistrationv1.ValidatingWebhookConfiguration)
		want   []want
	}{
		{"valid", func(*admissionregistrationv1.ValidatingWebhookConfiguration) {}, nil},
		{"no webhooks", func(c *admissionregistrationv1.ValidatingWebhookConfiguration) { c.Webhooks = nil }, nil},
		{"url and match conditions", func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://checks.example.com/pods")}
			c.Webhooks[0].MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "not-system", Expression: `!request.userInfo.username.startsWith("system:")`}}
		}, nil},
		{"webhook name, side effects, review versions", func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].Name = "pods"
			c.Webhooks[0].SideEffects = nil
			c.Webhooks[0].AdmissionReviewVersions = nil
		}, []want{
			{"FieldValueInvalid webhooks[0].name", "should be a domain with at least three segments separated by dots"},
			{"FieldValueRequired webhooks[0].sideEffects", "must specify one of None, NoneOnDryRun"},
			{"FieldValueRequired webhooks[0].admissionReviewVersions", "must specify one of v1, v1beta1"},
		}},
		{"two webhooks of one name", func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks = append(c.Webhooks, *c.Webhooks[0].DeepCopy())
		}, []want{{"FieldValueDuplicate webhooks[1].name", ""}}},
		{"http url", func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To("http://checks.example.com")}
		}, []want{{"FieldValueInvalid webhooks[0].clientConfig.url", "'https' is the only allowed URL scheme"}}},
		{"timeout and rule", func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].TimeoutSeconds = ptr.To[int32](60)
			c.Webhooks[0].Rules[0].Resources = []string{"*", "pods"}
		}, []want{
			{"FieldValueInvalid webhooks[0].rules[0].resources", "if '*' is present, must not specify other resources without subresources"},
			{"FieldValueInvalid webhooks[0].timeoutSeconds", "the timeout value must be between 1 and 30 seconds"},
		}},
		{"match condition", func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "x", Expression: "object.x +"}}
		}, []want{{"FieldValueInvalid webhooks[0].matchConditions[0].expression", "compilation failed"}}},
		{"reserved name", func(c *admissionregistrationv1.ValidatingWebhookConfiguration) { c.Name = "checks.static.k8s.io" }, []want{
			{"FieldValueInvalid metadata.name", "reserved for static manifest-based configurations"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := config()
			tt.modify(c)
			registrytest.ExpectWant(t, registrytest.Create(Resource(), c), tt.want...)
			if c.Generation != 1 {
				t.Errorf("generation = %d, want 1", c.Generation)
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	tests := []struct {
		name           string
		stored         func(*admissionregistrationv1.ValidatingWebhookConfiguration)
		modify         func(*admissionregistrationv1.ValidatingWebhookConfiguration)
		wantGeneration int64
		want           []want
	}{
		{"labels", func(*admissionregistrationv1.ValidatingWebhookConfiguration) {}, func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Labels = map[string]string{"a": "b"}
		}, 1, nil},
		{"timeout", func(*admissionregistrationv1.ValidatingWebhookConfiguration) {}, func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].TimeoutSeconds = ptr.To[int32](5)
		}, 2, nil},
		{"defaults written out change nothing", func(*admissionregistrationv1.ValidatingWebhookConfiguration) {}, func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			*c = *config()
		}, 1, nil},
		{"side effects Some, stored", func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].SideEffects = ptr.To(admissionregistrationv1.SideEffectClassSome)
		}, func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].TimeoutSeconds = ptr.To[int32](5)
		}, 2, nil},
		{"side effects Some, new", func(*admissionregistrationv1.ValidatingWebhookConfiguration) {}, func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].SideEffects = ptr.To(admissionregistrationv1.SideEffectClassSome)
		}, 2, []want{{"FieldValueNotSupported webhooks[0].sideEffects", `supported values: "None", "NoneOnDryRun"`}}},
		// The reserved suffix is only refused on create (upstream warns on update).
		{"reserved name, stored", func(c *admissionregistrationv1.ValidatingWebhookConfiguration) { c.Name = "checks.static.k8s.io" },
			func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
				c.Labels = map[string]string{"a": "b"}
			}, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := config()
			tt.stored(old)
			Resource().Default(old)
			old.Generation = 1
			c := old.DeepCopy()
			tt.modify(c)
			c.Name, c.Generation = old.Name, old.Generation // as the handlers keep them
			registrytest.ExpectWant(t, registrytest.Update(Resource(), c, old), tt.want...)
			if c.Generation != tt.wantGeneration {
				t.Errorf("generation = %d, want %d", c.Generation, tt.wantGeneration)
			}
		})
	}
}

func TestRow(t *testing.T) {
	r := Resource()
	created := metav1.NewTime(time.Date(2025, 5, 3, 16, 0, 0, 0, time.UTC))
	c := config()
	c.CreationTimestamp = created
	c.Webhooks = append(c.Webhooks, c.Webhooks[0])
	row := r.Row(c, created.Add(90*time.Minute))
	registrytest.CheckTable(t, r, row)
	if want := []interface{}{"checks", int64(2), "90m"}; !reflect.DeepEqual(row, want) {
		t.Errorf("row = %#v, want %#v", row, want)
	}
	var headers []string
	for _, col := range r.Columns {
		headers = append(headers, col.Name)
	}
	if !reflect.DeepEqual(headers, []string{"Name", "Webhooks", "Age"}) {
		t.Errorf("kubectl get shows %v", headers)
	}
}
