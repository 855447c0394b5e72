package manifests

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery/cached/memory"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/restmapper"
	clienttesting "k8s.io/client-go/testing"
)

// TestMappingRediscoversUnknownKinds: a kind discovery did not know when
// the mapper was filled (a CustomResourceDefinition applied since) is
// found after the mapper discovers again.
func TestMappingRediscoversUnknownKinds(t *testing.T) {
	disc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "configmaps", Kind: "ConfigMap", Namespaced: true}}},
	}}}
	a := &objectApplier{mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}}}
	widget := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}}}

	if m, err := a.mapping(cm); err != nil || m.Resource.Resource != "configmaps" {
		t.Fatalf("ConfigMap: mapping %v, err %v", m, err)
	}
	_, err := a.mapping(widget)
	if err == nil || !strings.Contains(err.Error(), `the server has no resource for kind "Widget" in "example.com/v1"`) {
		t.Fatalf("Widget before its definition: err %v", err)
	}

	disc.Resources = append(disc.Resources, &metav1.APIResourceList{GroupVersion: "example.com/v1",
		APIResources: []metav1.APIResource{{Name: "widgets", Kind: "Widget", Namespaced: false}}})
	m, err := a.mapping(widget)
	if err != nil {
		t.Fatalf("Widget after its definition: %v", err)
	}
	if m.Resource.Group != "example.com" || m.Resource.Resource != "widgets" || m.Scope.Name() != "root" {
		t.Errorf("Widget mapping %+v, scope %s", m.Resource, m.Scope.Name())
	}
}
