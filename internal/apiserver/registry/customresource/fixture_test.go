package customresource

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"orch/internal/apiserver/registry"
)

// widgetsCRD has, in v1: defaults, CEL rules (one a transition rule), an
// enum, an int-or-string, a preserve-unknown-fields subtree, an embedded
// resource, a list-map, status and scale subresources, printer columns
// (one a date) and selectable fields. v2 is served without subresources,
// v0 is neither served nor stored.
const widgetsCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names:
    plural: widgets
    singular: widget
    kind: Widget
    listKind: WidgetList
    shortNames: [wd]
    categories: [all]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
        labelSelectorPath: .status.selector
    additionalPrinterColumns:
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Color, type: string, jsonPath: .spec.color}
    - {name: Ports, type: string, jsonPath: .spec.ports, priority: 1}
    - {name: Built, type: date, jsonPath: .spec.builtAt}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    selectableFields:
    - jsonPath: .spec.color
    - jsonPath: .spec.replicas
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: self.replicas <= self.maxReplicas
              message: replicas must not exceed maxReplicas
            - rule: self.color == oldSelf.color
              message: color is immutable
            properties:
              replicas: {type: integer, minimum: 0, default: 1}
              maxReplicas: {type: integer, default: 10}
              color: {type: string, enum: [blue, red, green], default: blue}
              port: {x-kubernetes-int-or-string: true}
              builtAt: {type: string}
              extra:
                type: object
                x-kubernetes-preserve-unknown-fields: true
              template:
                type: object
                x-kubernetes-embedded-resource: true
                properties:
                  spec:
                    type: object
                    properties:
                      image: {type: string}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer}
          status:
            type: object
            properties:
              replicas: {type: integer}
              selector: {type: string}
              phase: {type: string, maxLength: 10}
  - name: v2
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
          status:
            type: object
            properties:
              ready: {type: boolean}
  - name: v0
    served: false
    storage: false
    schema:
      openAPIV3Schema:
        type: object
`

func crdFrom(t *testing.T, text string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict([]byte(text), crd); err != nil {
		t.Fatalf("decoding the CRD: %v", err)
	}
	return crd
}

// widgets is the registry entry of widgets.example.com at version.
func widgets(t *testing.T, version string) registry.Resource {
	t.Helper()
	res, err := Resource(crdFrom(t, widgetsCRD), version)
	if err != nil {
		t.Fatalf("Resource(widgets, %s): %v", version, err)
	}
	return res
}

// object decodes a YAML custom resource as the apiserver would from JSON
// (integers as int64).
func object(t *testing.T, text string) *unstructured.Unstructured {
	t.Helper()
	data, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		t.Fatalf("converting the object to JSON: %v", err)
	}
	content := map[string]interface{}{}
	if err := utiljson.Unmarshal(data, &content); err != nil {
		t.Fatalf("decoding the object: %v", err)
	}
	return &unstructured.Unstructured{Object: content}
}

// widget is a v1 Widget named w in namespace default, with spec and status
// in YAML flow style ("{replicas: 2}"); an empty string leaves it out.
func widget(t *testing.T, spec, status string) *unstructured.Unstructured {
	t.Helper()
	text := "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: default}\n"
	if spec != "" {
		text += "spec: " + spec + "\n"
	}
	if status != "" {
		text += "status: " + status + "\n"
	}
	return object(t, text)
}
