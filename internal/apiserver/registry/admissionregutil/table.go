package admissionregutil

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var metaDocs = metav1.ObjectMeta{}.SwaggerDoc()

// Columns of upstream's tables for this group.
var (
	NameColumn = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: metaDocs["name"]}
	AgeColumn  = metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: metaDocs["creationTimestamp"]}
	// WebhookColumns are the table of both webhook configurations.
	WebhookColumns = []metav1.TableColumnDefinition{
		NameColumn,
		{Name: "Webhooks", Type: "integer", Description: "Webhooks indicates the number of webhooks registered in this configuration"},
		AgeColumn,
	}
	// ParamKindColumn is the param kind of a policy.
	ParamKindColumn = metav1.TableColumnDefinition{Name: "ParamKind", Type: "string", Description: "ParamKind specifies the kind of resources used to parameterize this policy"}
	// BindingColumns are the table of both policy bindings.
	BindingColumns = []metav1.TableColumnDefinition{
		NameColumn,
		{Name: "PolicyName", Type: "string", Description: "PolicyName indicates the policy definition which the policy binding binded to"},
		{Name: "ParamRef", Type: "string", Description: "ParamRef indicates the param resource which sets the configuration param"},
		AgeColumn,
	}
)

// ParamKindCell is a policy's paramKind as apiVersion/kind, or <unset>.
func ParamKindCell(pk *admissionregistrationv1.ParamKind) string {
	if pk == nil {
		return "<unset>"
	}
	return pk.APIVersion + "/" + pk.Kind
}

// ParamRefCell is a binding's paramRef: namespace/name (*/name without a
// namespace, which may mean a cluster-scoped param), the selector, or
// <unset>.
func ParamRefCell(pr *admissionregistrationv1.ParamRef) string {
	switch {
	case pr == nil:
		return "<unset>"
	case pr.Name != "" && pr.Namespace != "":
		return pr.Namespace + "/" + pr.Name
	case pr.Name != "":
		return "*/" + pr.Name
	case pr.Selector != nil:
		return pr.Selector.String()
	}
	return "<unset>"
}
