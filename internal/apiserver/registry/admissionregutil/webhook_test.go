package admissionregutil

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

// hook is a valid, defaulted webhook calling a service.
func hook() Webhook {
	return Webhook{
		Name: "check.example.com",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{
			Service: &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "svc", Path: ptr.To("/validate"), Port: ptr.To[int32](443)},
		},
		Rules:                   []admissionregistrationv1.RuleWithOperations{podRule()},
		FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
		MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
		NamespaceSelector:       &metav1.LabelSelector{},
		ObjectSelector:          &metav1.LabelSelector{},
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		TimeoutSeconds:          ptr.To[int32](10),
		AdmissionReviewVersions: []string{"v1"},
	}
}

func url(u string) admissionregistrationv1.WebhookClientConfig {
	return admissionregistrationv1.WebhookClientConfig{URL: &u}
}

func service(name, namespace, path string, port int32) admissionregistrationv1.WebhookClientConfig {
	return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: namespace, Name: name, Path: &path, Port: &port}}
}

func TestValidateWebhooks(t *testing.T) {
	badValue := &metav1.LabelSelector{MatchLabels: map[string]string{"a": "-bad-"}}
	tests := []struct {
		name   string
		modify func(*Webhook)
		want   []want
	}{
		{"valid service", func(*Webhook) {}, nil},
		{"valid url, caBundle, match conditions", func(w *Webhook) {
			w.ClientConfig = url("https://hooks.example.com:8443/check")
			w.ClientConfig.CABundle = []byte("not checked")
			w.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun)
			w.AdmissionReviewVersions = []string{"v2", "v1beta1"}
			w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "not-kube-system", Expression: `request.namespace != "kube-system"`}}
			w.ReinvocationPolicy = ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy)
		}, nil},
		{"no name", func(w *Webhook) { w.Name = "" }, []want{{"FieldValueRequired webhooks[0].name", ""}}},
		{"name not fully qualified", func(w *Webhook) { w.Name = "example.com" }, []want{
			{"FieldValueInvalid webhooks[0].name", "should be a domain with at least three segments separated by dots"},
		}},
		{"name not a DNS subdomain", func(w *Webhook) { w.Name = "Check.example.com" }, []want{
			{"FieldValueInvalid webhooks[0].name", "a lowercase RFC 1123 subdomain"},
		}},
		{"bad rule", func(w *Webhook) { w.Rules[0].APIVersions = nil }, []want{{"FieldValueRequired webhooks[0].rules[0].apiVersions", ""}}},
		{"enums", func(w *Webhook) {
			w.FailurePolicy = ptr.To(admissionregistrationv1.FailurePolicyType("Retry"))
			w.MatchPolicy = ptr.To(admissionregistrationv1.MatchPolicyType("Close"))
			w.ReinvocationPolicy = ptr.To(admissionregistrationv1.ReinvocationPolicyType("Always"))
		}, []want{
			{"FieldValueNotSupported webhooks[0].failurePolicy", `supported values: "Fail", "Ignore"`},
			{"FieldValueNotSupported webhooks[0].matchPolicy", `supported values: "Equivalent", "Exact"`},
			{"FieldValueNotSupported webhooks[0].reinvocationPolicy", `supported values: "IfNeeded", "Never"`},
		}},
		{"no side effects", func(w *Webhook) { w.SideEffects = nil }, []want{
			{"FieldValueRequired webhooks[0].sideEffects", "must specify one of None, NoneOnDryRun"},
		}},
		{"side effects", func(w *Webhook) { w.SideEffects = ptr.To(admissionregistrationv1.SideEffectClass("Some")) }, []want{
			{"FieldValueNotSupported webhooks[0].sideEffects", `supported values: "None", "NoneOnDryRun"`},
		}},
		{"timeout 0", func(w *Webhook) { w.TimeoutSeconds = ptr.To[int32](0) }, []want{
			{"FieldValueInvalid webhooks[0].timeoutSeconds", "the timeout value must be between 1 and 30 seconds"},
		}},
		{"timeout 31", func(w *Webhook) { w.TimeoutSeconds = ptr.To[int32](31) }, []want{
			{"FieldValueInvalid webhooks[0].timeoutSeconds", "the timeout value must be between 1 and 30 seconds"},
		}},
		{"bad selectors", func(w *Webhook) {
			w.NamespaceSelector = badValue
			w.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}
		}, []want{
			{"FieldValueInvalid webhooks[0].namespaceSelector.matchLabels", "a valid label must be"},
			{"FieldValueInvalid webhooks[0].objectSelector.matchExpressions[0].operator", "not a valid selector operator"},
		}},
		{"url and service", func(w *Webhook) { w.ClientConfig.URL = ptr.To("https://a.example.com") }, []want{
			{"FieldValueRequired webhooks[0].clientConfig", "exactly one of url or service is required"},
		}},
		{"neither url nor service", func(w *Webhook) { w.ClientConfig = admissionregistrationv1.WebhookClientConfig{} }, []want{
			{"FieldValueRequired webhooks[0].clientConfig", "exactly one of url or service is required"},
		}},
		{"http url", func(w *Webhook) { w.ClientConfig = url("http://a.example.com/") }, []want{
			{"FieldValueInvalid webhooks[0].clientConfig.url", "'https' is the only allowed URL scheme; desired format: https://host[/path]"},
		}},
		{"url without host", func(w *Webhook) { w.ClientConfig = url("https:///path") }, []want{
			{"FieldValueInvalid webhooks[0].clientConfig.url", "host must be specified"},
		}},
		{"url with user, query and fragment", func(w *Webhook) { w.ClientConfig = url("https://me@a.example.com/p?q=1#f") }, []want{
			{"FieldValueInvalid webhooks[0].clientConfig.url", "user information is not permitted in the URL"},
			{"FieldValueInvalid webhooks[0].clientConfig.url", "fragments are not permitted in the URL"},
			{"FieldValueInvalid webhooks[0].clientConfig.url", "query parameters are not permitted in the URL"},
		}},
		{"url that does not parse", func(w *Webhook) { w.ClientConfig = url("https://a b/%zz") }, []want{
			{"FieldValueRequired webhooks[0].clientConfig.url", "url must be a valid URL"},
		}},
		{"service without name and namespace, port 0", func(w *Webhook) { w.ClientConfig = service("", "", "", 0) }, []want{
			{"FieldValueRequired webhooks[0].clientConfig.service.name", ""},
			{"FieldValueRequired webhooks[0].clientConfig.service.namespace", ""},
			{"FieldValueInvalid webhooks[0].clientConfig.service.port", "port is not valid: must be between 1 and 65535, inclusive"},
		}},
		{"service port too large", func(w *Webhook) { w.ClientConfig = service("svc", "ns", "/", 65536) }, []want{
			{"FieldValueInvalid webhooks[0].clientConfig.service.port", "port is not valid"},
		}},
		{"relative service path", func(w *Webhook) { w.ClientConfig = service("svc", "ns", "validate", 443) }, []want{
			{"FieldValueInvalid webhooks[0].clientConfig.service.path", "must start with a '/'"},
		}},
		{"empty segment in service path", func(w *Webhook) { w.ClientConfig = service("svc", "ns", "/a//b", 443) }, []want{
			{"FieldValueInvalid webhooks[0].clientConfig.service.path", "segment[1] may not be empty"},
		}},
		{"service path segment not a subdomain", func(w *Webhook) { w.ClientConfig = service("svc", "ns", "/Validate/", 443) }, []want{
			{"FieldValueInvalid webhooks[0].clientConfig.service.path", "segment[0]: a lowercase RFC 1123 subdomain"},
		}},
		{"no admission review versions", func(w *Webhook) { w.AdmissionReviewVersions = nil }, []want{
			{"FieldValueRequired webhooks[0].admissionReviewVersions", "must specify one of v1, v1beta1"},
		}},
		{"unknown admission review versions", func(w *Webhook) { w.AdmissionReviewVersions = []string{"v2", "v2", "V3"} }, []want{
			{"FieldValueInvalid webhooks[0].admissionReviewVersions[1]", "duplicate version"},
			{"FieldValueInvalid webhooks[0].admissionReviewVersions[2]", "a DNS-1035 label must consist of lower case"},
			{"FieldValueInvalid webhooks[0].admissionReviewVersions", "must include at least one of v1, v1beta1"},
		}},
		{"match condition that does not compile", func(w *Webhook) {
			w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "params", Expression: "params.x == 1"}}
		}, []want{
			{"FieldValueInvalid webhooks[0].matchConditions[0].expression", "undeclared reference to 'params'"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := hook()
			tt.modify(&w)
			registrytest.ExpectWant(t, ValidateWebhooks([]Webhook{w}, NewWebhookOptions(), field.NewPath("webhooks")), tt.want...)
		})
	}
}

func TestValidateWebhooksNames(t *testing.T) {
	a, b, c := hook(), hook(), hook()
	c.Name = "other.example.com"
	registrytest.ExpectWant(t, ValidateWebhooks([]Webhook{a, b, c}, NewWebhookOptions(), field.NewPath("webhooks")),
		want{"FieldValueDuplicate webhooks[1].name", ""})
}

// TestUpdateWebhookOptions checks that an update only relaxes the checks
// the stored webhooks already failed.
func TestUpdateWebhookOptions(t *testing.T) {
	tests := []struct {
		name   string
		old    func(*Webhook)
		update func(*Webhook)
		want   []want
	}{
		{"side effects, stored", func(w *Webhook) { w.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassSome) },
			func(w *Webhook) { w.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassUnknown) }, nil},
		{"side effects, new", func(*Webhook) {}, func(w *Webhook) { w.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassSome) }, []want{
			{"FieldValueNotSupported webhooks[0].sideEffects", `supported values: "None", "NoneOnDryRun"`},
		}},
		{"unknown side effects, stored", func(w *Webhook) { w.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassSome) },
			func(w *Webhook) { w.SideEffects = ptr.To(admissionregistrationv1.SideEffectClass("Many")) }, []want{
				{"FieldValueNotSupported webhooks[0].sideEffects", `supported values: "None", "NoneOnDryRun", "Some", "Unknown"`},
			}},
		{"unknown review versions, stored", func(w *Webhook) { w.AdmissionReviewVersions = []string{"v0"} },
			func(w *Webhook) { w.AdmissionReviewVersions = []string{"v2"} }, nil},
		{"unknown review versions, new", func(*Webhook) {}, func(w *Webhook) { w.AdmissionReviewVersions = []string{"v2"} }, []want{
			{"FieldValueInvalid webhooks[0].admissionReviewVersions", "must include at least one of v1, v1beta1"},
		}},
		// Upstream accepted invalid values in selector expressions once.
		{"invalid label values in expressions, stored", func(w *Webhook) { w.ObjectSelector = in("a", "-x-") },
			func(w *Webhook) { w.NamespaceSelector = in("b", "-y-") }, nil},
		{"invalid label values in expressions, new", func(*Webhook) {}, func(w *Webhook) { w.NamespaceSelector = in("b", "-y-") }, []want{
			{"FieldValueInvalid webhooks[0].namespaceSelector.matchExpressions[0].values[0]", "a valid label must be"},
		}},
		{"match conditions unchanged are not compiled again", func(w *Webhook) {
			w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "old", Expression: "no such thing"}}
		}, func(w *Webhook) { w.TimeoutSeconds = ptr.To[int32](5) }, nil},
		{"match conditions changed are", func(w *Webhook) {
			w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "old", Expression: "no such thing"}}
		}, func(w *Webhook) { w.MatchConditions[0].Name = "new" }, []want{
			{"FieldValueInvalid webhooks[0].matchConditions[0].expression", "compilation failed"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := hook()
			tt.old(&old)
			w := old
			w.MatchConditions = append([]admissionregistrationv1.MatchCondition(nil), old.MatchConditions...)
			tt.update(&w)
			opts := UpdateWebhookOptions([]Webhook{w}, []Webhook{old})
			registrytest.ExpectWant(t, ValidateWebhooks([]Webhook{w}, opts, field.NewPath("webhooks")), tt.want...)
		})
	}

	// Duplicate names stored stay allowed; new ones are not.
	dup := []Webhook{hook(), hook()}
	registrytest.ExpectWant(t, ValidateWebhooks(dup, UpdateWebhookOptions(dup, dup), field.NewPath("webhooks")))
	other := hook()
	other.Name = "other.example.com"
	registrytest.ExpectWant(t, ValidateWebhooks(dup, UpdateWebhookOptions(dup, []Webhook{hook(), other}), field.NewPath("webhooks")),
		want{"FieldValueDuplicate webhooks[1].name", ""})
}

// in is a selector of objects whose label key has the value.
func in(key, value string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: metav1.LabelSelectorOpIn, Values: []string{value}}}}
}

func TestDefaultClientConfig(t *testing.T) {
	cc := service("svc", "ns", "/", 0)
	cc.Service.Port = nil
	DefaultClientConfig(&cc)
	if cc.Service.Port == nil || *cc.Service.Port != 443 {
		t.Errorf("port = %v, want 443", cc.Service.Port)
	}
	cc = service("svc", "ns", "/", 8443)
	DefaultClientConfig(&cc)
	if *cc.Service.Port != 8443 {
		t.Errorf("port = %d, want 8443 kept", *cc.Service.Port)
	}
	u := url("https://a.example.com")
	DefaultClientConfig(&u)
	if u.Service != nil {
		t.Errorf("service = %+v, want none", u.Service)
	}
}
