// Package validatingwebhookconfigurations is the registry entry for
// admissionregistration.k8s.io/v1 validatingwebhookconfigurations, with
// upstream's defaults, validation and table. Calling the webhooks is done
// elsewhere.
package validatingwebhookconfigurations

import (
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/admissionregutil"
)

// Resource returns the validatingwebhookconfigurations entry. Validate is
// nil: a create and an update are checked by two complete functions, as
// upstream does, since an update relaxes what the stored object broke.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:     admissionregistrationv1.SchemeGroupVersion,
		Resource:         "validatingwebhookconfigurations",
		Kind:             "ValidatingWebhookConfiguration",
		SingularName:     "validatingwebhookconfiguration",
		Categories:       []string{"api-extensions"},
		New:              func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfiguration{} },
		NewList:          func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfigurationList{} },
		Default:          setDefaults,
		PrepareForCreate: prepareForCreate,
		PrepareForUpdate: prepareForUpdate,
		ValidateCreate:   validateCreate,
		ValidateUpdate:   validateUpdate,
		Columns:          admissionregutil.WebhookColumns,
		Row:              row,
	}
}

// setDefaults is upstream's: failurePolicy Fail, matchPolicy Equivalent,
// selectors that match everything, a 10 s timeout, rules of any scope and
// service port 443. sideEffects and admissionReviewVersions have no default.
func setDefaults(obj runtime.Object) {
	c := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		admissionregutil.DefaultFailurePolicy(&w.FailurePolicy)
		admissionregutil.DefaultMatchPolicy(&w.MatchPolicy)
		admissionregutil.DefaultSelector(&w.NamespaceSelector)
		admissionregutil.DefaultSelector(&w.ObjectSelector)
		if w.TimeoutSeconds == nil {
			timeout := int32(10)
			w.TimeoutSeconds = &timeout
		}
		admissionregutil.DefaultClientConfig(&w.ClientConfig)
		admissionregutil.DefaultRules(w.Rules)
	}
}

// prepareForCreate starts the generation at 1, as upstream does for this
// resource although it has no status.
func prepareForCreate(obj runtime.Object) {
	obj.(*admissionregistrationv1.ValidatingWebhookConfiguration).Generation = 1
}

// prepareForUpdate moves the generation on when the webhooks change.
func prepareForUpdate(obj, old runtime.Object) {
	c, oldC := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration), old.(*admissionregistrationv1.ValidatingWebhookConfiguration)
	if !apiequality.Semantic.DeepEqual(c.Webhooks, oldC.Webhooks) {
		c.Generation = oldC.Generation + 1
	}
}

func validateCreate(obj runtime.Object) field.ErrorList {
	c := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
	errs := admissionregutil.ValidateWebhooks(webhooks(c), admissionregutil.NewWebhookOptions(), field.NewPath("webhooks"))
	return append(errs, admissionregutil.ValidateStaticSuffix(c.Name)...)
}

func validateUpdate(obj, old runtime.Object) field.ErrorList {
	hooks := webhooks(obj.(*admissionregistrationv1.ValidatingWebhookConfiguration))
	oldHooks := webhooks(old.(*admissionregistrationv1.ValidatingWebhookConfiguration))
	return admissionregutil.ValidateWebhooks(hooks, admissionregutil.UpdateWebhookOptions(hooks, oldHooks), field.NewPath("webhooks"))
}

// webhooks returns the configuration's webhooks in the shared form.
func webhooks(c *admissionregistrationv1.ValidatingWebhookConfiguration) []admissionregutil.Webhook {
	out := make([]admissionregutil.Webhook, len(c.Webhooks))
	for i, w := range c.Webhooks {
		out[i] = admissionregutil.Webhook{
			Name:                    w.Name,
			ClientConfig:            w.ClientConfig,
			Rules:                   w.Rules,
			FailurePolicy:           w.FailurePolicy,
			MatchPolicy:             w.MatchPolicy,
			NamespaceSelector:       w.NamespaceSelector,
			ObjectSelector:          w.ObjectSelector,
			SideEffects:             w.SideEffects,
			TimeoutSeconds:          w.TimeoutSeconds,
			AdmissionReviewVersions: w.AdmissionReviewVersions,
			MatchConditions:         w.MatchConditions,
		}
	}
	return out
}

// row is upstream's: name, number of webhooks, age.
func row(obj runtime.Object, now time.Time) []interface{} {
	c := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
	return []interface{}{c.Name, int64(len(c.Webhooks)), registry.Age(c.CreationTimestamp, now)}
}
