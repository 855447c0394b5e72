// Package admissionregutil holds what the six admissionregistration.k8s.io/v1
// registry entries share, after upstream's admissionregistration validation:
// the defaults and checks of rules, match resources, webhooks and their
// client configs, selectors, param kinds and references, and the
// compilation of their CEL expressions with upstream's admission CEL
// environments; and the table cells of policies and bindings.
package admissionregutil
