package openapi

// These tests run the real consumers of the documents, as kubectl and the
// apiserver use them, over HTTP where they fetch the documents themselves.

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/openapi/cached"
	"k8s.io/client-go/openapi3"
	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/util/proto"
	explainv2 "k8s.io/kubectl/pkg/explain/v2"
	"k8s.io/utils/ptr"
)

var deploymentGVK = appsv1.SchemeGroupVersion.WithKind("Deployment")

// serve starts a server with the documents and returns the clients kubectl builds.
func serve(t *testing.T) (*discovery.DiscoveryClient, dynamic.Interface) {
	t.Helper()
	srv := httptest.NewServer(mustBuild(t))
	t.Cleanup(srv.Close)
	config := &rest.Config{Host: srv.URL}
	dc, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return dc, dyn
}

// v2Models fetches /openapi/v2 as protobuf, as client-go does, and parses it
// the way kubectl does.
func v2Models(t *testing.T, dc *discovery.DiscoveryClient) proto.Models {
	t.Helper()
	doc, err := dc.OpenAPISchema()
	if err != nil {
		t.Fatalf("fetching /openapi/v2 as protobuf: %v", err)
	}
	models, err := proto.NewOpenAPIData(doc)
	if err != nil {
		t.Fatalf("proto.NewOpenAPIData: %v", err)
	}
	return models
}

func kindField(t *testing.T, s proto.Schema, name string) proto.Schema {
	t.Helper()
	if ref, ok := s.(proto.Reference); ok {
		s = ref.SubSchema()
	}
	kind, ok := s.(*proto.Kind)
	if !ok {
		t.Fatalf("%s is a %T, not a kind", s.GetPath(), s)
	}
	f, ok := kind.Fields[name]
	if !ok {
		t.Fatalf("%s has no field %q (fields %v)", s.GetPath(), name, kind.Keys())
	}
	return f
}

// (1) The v2 document parses into kubectl's models, with kinds, fields and patch extensions.
func TestV2ProtoModels(t *testing.T) {
	dc, _ := serve(t)
	models := v2Models(t, dc)
	deployment := models.LookupModel("io.k8s.api.apps.v1.Deployment")
	if deployment == nil {
		t.Fatal("no Deployment model")
	}
	gvks, _ := deployment.GetExtensions()["x-kubernetes-group-version-kind"].([]any)
	if len(gvks) != 1 {
		t.Errorf("Deployment x-kubernetes-group-version-kind = %v", deployment.GetExtensions())
	}
	spec := kindField(t, deployment, "spec")
	replicas, ok := kindField(t, spec, "replicas").(*proto.Primitive)
	if !ok || replicas.Type != "integer" || replicas.Format != "int32" {
		t.Errorf("spec.replicas = %#v", replicas)
	}
	if !strings.Contains(kindField(t, spec, "strategy").GetDescription(), "deployment strategy") {
		t.Errorf("spec.strategy description = %q", kindField(t, spec, "strategy").GetDescription())
	}
	podSpec := kindField(t, kindField(t, spec, "template"), "spec")
	containers, ok := kindField(t, podSpec, "containers").(*proto.Array)
	if !ok {
		t.Fatalf("containers is %T", kindField(t, podSpec, "containers"))
	}
	ext := containers.GetExtensions()
	if ext["x-kubernetes-patch-merge-key"] != "name" || ext["x-kubernetes-patch-strategy"] != "merge" || ext["x-kubernetes-list-type"] != "map" {
		t.Errorf("containers extensions = %v", ext)
	}
	if kind := containers.SubType.(proto.Reference).SubSchema().(*proto.Kind); !kind.IsRequired("name") {
		t.Errorf("Container required fields = %v", kind.RequiredFields)
	}
	ports := kindField(t, containers.SubType, "ports").GetExtensions()
	if keys, _ := ports["x-kubernetes-list-map-keys"].([]any); len(keys) != 2 || keys[0] != "containerPort" || keys[1] != "protocol" {
		t.Errorf("containers.ports extensions = %v", ports)
	}
}

// (2) Server-side apply's type converter accepts the definitions and types objects with them.
func TestTypeConverter(t *testing.T) {
	docs := mustBuild(t)
	converter, err := managedfields.NewTypeConverter(docs.Definitions(), false)
	if err != nil {
		t.Fatalf("NewTypeConverter: %v", err)
	}
	deployment := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: "kube-system", Labels: map[string]string{"app": "dns"}, Finalizers: []string{"a", "b"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "dns"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "dns"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:  "dns",
					Image: "dns:1",
					// Two ports with one number: keyed by containerPort and protocol, as upstream.
					Ports: []corev1.ContainerPort{{ContainerPort: 53, Protocol: "UDP"}, {ContainerPort: 53, Protocol: "TCP"}},
				}}},
			},
		},
	}
	typed, err := converter.ObjectToTyped(deployment)
	if err != nil {
		t.Fatalf("ObjectToTyped: %v", err)
	}
	set, err := typed.ToFieldSet()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`.spec.template.spec.containers[name="dns"].ports[containerPort=53,protocol="UDP"]`,
		`.metadata.finalizers[="a"]`,
		`.spec.selector`,
	} {
		if !strings.Contains(set.String(), want) {
			t.Errorf("field set lacks %s:\n%s", want, set)
		}
	}
	if strings.Contains(set.String(), ".spec.selector.matchLabels") {
		t.Error("LabelSelector is atomic upstream; its fields must not be tracked one by one")
	}

	// Two containers with one name break the map list; an unknown field is not in the schema.
	twins := deployment.DeepCopy()
	twins.Spec.Template.Spec.Containers = append(twins.Spec.Template.Spec.Containers, twins.Spec.Template.Spec.Containers[0])
	if _, err := converter.ObjectToTyped(twins); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Errorf("duplicate container names: err = %v", err)
	}
	unknown := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "x"}, "spec": map[string]any{"bogus": 1},
	}}
	if _, err := converter.ObjectToTyped(unknown); err == nil {
		t.Error("an unknown field was accepted")
	}
	for _, obj := range []*unstructured.Unstructured{
		{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "spec": map[string]any{"containers": []any{map[string]any{"name": "a", "resources": map[string]any{"limits": map[string]any{"cpu": "100m", "memory": 1024}}, "ports": []any{map[string]any{"containerPort": 80}}}}}}},
		{Object: map[string]any{"apiVersion": "v1", "kind": "Service", "spec": map[string]any{"ports": []any{map[string]any{"port": 53, "protocol": "UDP", "targetPort": "dns"}, map[string]any{"port": 53, "protocol": "TCP", "targetPort": 53}}}}},
		{Object: map[string]any{"apiVersion": "v1", "kind": "Status", "status": "Failure", "code": 404}},
	} {
		if _, err := converter.ObjectToTyped(obj); err != nil {
			t.Errorf("ObjectToTyped(%s): %v", obj.GetKind(), err)
		}
	}
}

// (3) kubectl explain (the OpenAPI v3 explainer) prints the field docs.
func TestExplain(t *testing.T) {
	dc, _ := serve(t)
	var out bytes.Buffer
	gvr := appsv1.SchemeGroupVersion.WithResource("deployments")
	if err := explainv2.PrintModelDescription([]string{"spec", "strategy"}, &out, dc.OpenAPIV3(), gvr, false, 0, "plaintext"); err != nil {
		t.Fatalf("explain deployment.spec.strategy: %v", err)
	}
	for _, want := range []string{
		"GROUP:      apps",
		"KIND:       Deployment",
		"VERSION:    v1",
		"FIELD: strategy <DeploymentStrategy>",
		"The deployment strategy to use to replace existing pods with new ones.",
		"DeploymentStrategy describes how to replace existing pods with new ones.",
		"rollingUpdate\t<RollingUpdateDeployment>",
		"Rolling update config params.",
		"type\t<string>",
		"enum: Recreate, RollingUpdate",
		"Possible enum values:",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("explain output lacks %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	if err := explainv2.PrintModelDescription([]string{"spec", "template", "spec", "containers"}, &out, dc.OpenAPIV3(), gvr, false, 0, "plaintext"); err != nil {
		t.Fatalf("explain deployment.spec.template.spec.containers: %v", err)
	}
	if !strings.Contains(out.String(), "FIELD: containers <[]Container>") || !strings.Contains(out.String(), "name\t<string> -required-") {
		t.Errorf("explain containers:\n%s", out.String())
	}

	out.Reset()
	if err := explainv2.PrintModelDescription(nil, &out, dc.OpenAPIV3(), corev1.SchemeGroupVersion.WithResource("namespaces"), false, 0, "plaintext"); err != nil {
		t.Fatalf("explain namespaces: %v", err)
	}
	if !strings.Contains(out.String(), "KIND:       Namespace") || !strings.Contains(out.String(), "metadata\t<ObjectMeta>") {
		t.Errorf("explain namespaces:\n%s", out.String())
	}
}

// (4) kubectl's verifiers find fieldValidation and dryRun on PATCH, over v3 and over v2.
func TestQueryParamVerifiers(t *testing.T) {
	dc, dyn := serve(t)
	for _, param := range []resource.VerifiableQueryParam{resource.QueryParamFieldValidation, "dryRun"} {
		v3 := resource.NewQueryParamVerifierV3(dyn, cached.NewClient(dc.OpenAPIV3()), param)
		v2 := resource.NewQueryParamVerifier(dyn, dc, param)
		for _, gvk := range []schema.GroupVersionKind{deploymentGVK, corev1.SchemeGroupVersion.WithKind("Namespace"), corev1.SchemeGroupVersion.WithKind("Pod")} {
			if err := v3.HasSupport(gvk); err != nil {
				t.Errorf("v3 verifier: %s on %v: %v", param, gvk, err)
			}
			if err := v2.HasSupport(gvk); err != nil {
				t.Errorf("v2 verifier: %s on %v: %v", param, gvk, err)
			}
		}
	}
	v3 := resource.NewQueryParamVerifierV3(dyn, cached.NewClient(dc.OpenAPIV3()), resource.QueryParamFieldValidation)
	if err := v3.HasSupport(appsv1.SchemeGroupVersion.WithKind("NoSuchKind")); err == nil {
		t.Error("v3 verifier found an unknown kind")
	}
}

// (5) Strategic merge patches as kubectl apply computes them: from v2 models and from v3 schemas.
func TestStrategicMergePatchMeta(t *testing.T) {
	dc, _ := serve(t)

	// v2: patch metadata down to spec.template.spec.containers.
	var meta strategicpatch.LookupPatchMeta = strategicpatch.NewPatchMetaFromOpenAPI(v2Models(t, dc).LookupModel("io.k8s.api.apps.v1.Deployment"))
	for _, field := range []string{"spec", "template", "spec"} {
		next, _, err := meta.LookupPatchMetadataForStruct(field)
		if err != nil {
			t.Fatalf("looking up %s: %v", field, err)
		}
		meta = next
	}
	_, pm, err := meta.LookupPatchMetadataForSlice("containers")
	if err != nil {
		t.Fatal(err)
	}
	if pm.GetPatchMergeKey() != "name" || strings.Join(pm.GetPatchStrategies(), ",") != "merge" {
		t.Errorf("containers patch meta: merge key %q, strategies %v", pm.GetPatchMergeKey(), pm.GetPatchStrategies())
	}

	// v3: what kubectl apply does first: find the PATCH operation that takes a
	// strategic merge patch, then the schema with the GVK, then diff.
	gvSpec, err := openapi3.NewRoot(dc.OpenAPIV3()).GVSpec(appsv1.SchemeGroupVersion)
	if err != nil {
		t.Fatal(err)
	}
	smp := false
	for _, path := range gvSpec.Paths.Paths {
		var gvk map[string]string
		if path.Patch != nil && path.Patch.Extensions.GetObject("x-kubernetes-group-version-kind", &gvk) == nil && gvk["kind"] == "Deployment" {
			_, smp = path.Patch.RequestBody.Content["application/strategic-merge-patch+json"]
		}
	}
	if !smp {
		t.Error("no Deployment PATCH operation takes application/strategic-merge-patch+json")
	}
	v3Meta := strategicpatch.PatchMetaFromOpenAPIV3{Schema: gvSpec.Components.Schemas["io.k8s.api.apps.v1.Deployment"], SchemaList: gvSpec.Components.Schemas}
	original := `{"spec":{"template":{"spec":{"containers":[{"name":"a","image":"a:1"},{"name":"b","image":"b:1"}]}}}}`
	modified := `{"spec":{"template":{"spec":{"containers":[{"name":"a","image":"a:2"},{"name":"b","image":"b:1"}]}}}}`
	patch, err := strategicpatch.CreateThreeWayMergePatch([]byte(original), []byte(modified), []byte(original), v3Meta, false)
	if err != nil {
		t.Fatalf("CreateThreeWayMergePatch with v3 schemas: %v", err)
	}
	var got map[string]any
	_ = json.Unmarshal(patch, &got)
	want := `{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"a"},{"name":"b"}],"containers":[{"image":"a:2","name":"a"}]}}}}`
	if toJSON(got) != want {
		t.Errorf("patch = %s\nwant    %s", toJSON(got), want)
	}
}
