package crd

import (
	"context"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"orch/internal/controller"
)

// awaitTimeout bounds how long a test waits for the controller.
const awaitTimeout = 30 * time.Second

// names are the names of a CRD: kind and listKind KIND and KINDList,
// singular the lower-case kind.
func names(plural, kind string, short ...string) apiextensionsv1.CustomResourceDefinitionNames {
	return apiextensionsv1.CustomResourceDefinitionNames{
		Plural: plural, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List", ShortNames: short,
	}
}

// newCRD is CRD PLURAL.GROUP asking for n, with one served, stored
// version v1 whose schema is structural.
func newCRD(group string, n apiextensionsv1.CustomResourceDefinitionNames) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: n.Plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Names: n, Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
			}},
		},
	}
}

// given is crd having been given its names (status.acceptedNames).
func given(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	crd.Status.AcceptedNames = *crd.Spec.Names.DeepCopy()
	return crd
}

// withCondition is crd with condition t set to status and reason.
func withCondition(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType, status apiextensionsv1.ConditionStatus, reason string) *apiextensionsv1.CustomResourceDefinition {
	crd.Status.Conditions = append(crd.Status.Conditions, apiextensionsv1.CustomResourceDefinitionCondition{Type: t, Status: status, Reason: reason})
	return crd
}

// deleting is crd deleted, held by the customresourcecleanup finalizer.
func deleting(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	crd.DeletionTimestamp = ptr.To(metav1.Now())
	crd.Finalizers = []string{apiextensionsv1.CustomResourceCleanupFinalizer}
	return crd
}

// fakes are the fake clients a controller under test talks to.
type fakes struct {
	crds     *apiextensionsfake.Clientset
	metadata *metadatafake.FakeMetadataClient
}

// newFakes holds crds in the apiextensions client and instances (custom
// resources, as PartialObjectMetadata with their apiVersion and kind) in
// the metadata client, whose deletecollection deletes the instances of
// the namespace that have no finalizers, as the apiserver would.
func newFakes(crds []runtime.Object, instances ...*metav1.PartialObjectMetadata) *fakes {
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		panic(err)
	}
	objs := make([]runtime.Object, len(instances))
	for i, o := range instances {
		objs[i] = o
	}
	f := &fakes{crds: apiextensionsfake.NewSimpleClientset(crds...), metadata: metadatafake.NewSimpleMetadataClient(scheme, objs...)}
	f.metadata.PrependReactor("delete-collection", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		tracker := f.metadata.Tracker()
		list, err := tracker.List(a.GetResource(), schema.GroupVersionKind{Group: "fake-metadata-client-group", Version: "v1"}, a.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		for _, item := range list.(*metav1.List).Items {
			o := item.Object.(*metav1.PartialObjectMetadata)
			if len(o.Finalizers) == 0 {
				if err := tracker.Delete(a.GetResource(), o.Namespace, o.Name); err != nil {
					return true, nil, err
				}
			}
		}
		return true, nil, nil
	})
	return f
}

// instance is a custom resource of apiVersion and kind.
func instance(apiVersion, kind, namespace, name string, finalizers ...string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiVersion, Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Finalizers: finalizers},
	}
}

// remaining are the names (namespace/name) of the instances of gvr.
func (f *fakes) remaining(t *testing.T, gvr schema.GroupVersionResource) []string {
	t.Helper()
	list, err := f.metadata.Resource(gvr).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range list.Items {
		out = append(out, o.Namespace+"/"+o.Name)
	}
	return out
}

// deleteCollections are the namespaces of the deletecollections of gvr
// the metadata client was asked for.
func (f *fakes) deleteCollections(gvr schema.GroupVersionResource) []string {
	var out []string
	for _, a := range f.metadata.Actions() {
		if a.GetVerb() == "delete-collection" && a.GetResource() == gvr {
			out = append(out, a.GetNamespace())
		}
	}
	return out
}

// newController builds the controller on f, not started.
func newController(f *fakes) *Controller {
	return New(controller.Context{Metadata: f.metadata}, f.crds)
}

// start builds the controller on f and runs it until the test ends.
func start(t *testing.T, f *fakes) {
	t.Helper()
	c := newController(f)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	})
}

// await waits until CRD name satisfies cond, looking at it again at every
// change the client's watch reports, and returns it.
func await(t *testing.T, client apiextensionsclientset.Interface, name, what string, cond func(*apiextensionsv1.CustomResourceDefinition) bool) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), awaitTimeout)
	defer cancel()
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	w, err := crds.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if crd, err := crds.Get(ctx, name, metav1.GetOptions{}); err == nil && cond(crd) {
		return crd
	}
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("waiting for %s: the watch ended", what)
			}
			if crd, ok := ev.Object.(*apiextensionsv1.CustomResourceDefinition); ok && ev.Type != watch.Deleted && crd.Name == name && cond(crd) {
				return crd
			}
		case <-ctx.Done():
			crd, err := crds.Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("waiting for %s: %v", what, err)
			}
			t.Fatalf("waiting for %s: still not so after %v; status %+v", what, awaitTimeout, crd.Status)
		}
	}
}

// hasCondition is a condition for await: crd has condition t with status,
// reason and message.
func hasCondition(t apiextensionsv1.CustomResourceDefinitionConditionType, status apiextensionsv1.ConditionStatus, reason, message string) func(*apiextensionsv1.CustomResourceDefinition) bool {
	return func(crd *apiextensionsv1.CustomResourceDefinition) bool {
		for _, c := range crd.Status.Conditions {
			if c.Type == t {
				return c.Status == status && c.Reason == reason && c.Message == message
			}
		}
		return false
	}
}
