package crd

import (
	"context"
	"reflect"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestEstablishes: a new CRD is given its names and established at once.
func TestEstablishes(t *testing.T) {
	f := newFakes(nil)
	start(t, f)
	crd := newCRD("example.com", names("widgets", "Widget", "w"))
	if _, err := f.crds.ApiextensionsV1().CustomResourceDefinitions().Create(context.Background(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := await(t, f.crds, crd.Name, "the CRD established",
		hasCondition(apiextensionsv1.Established, apiextensionsv1.ConditionTrue, reasonInitialNamesAccepted, messageInitialNamesAccepted))
	if !hasCondition(apiextensionsv1.NamesAccepted, apiextensionsv1.ConditionTrue, reasonNoConflicts, messageNoConflicts)(got) {
		t.Errorf("conditions %+v, want NamesAccepted True", got.Status.Conditions)
	}
	if !reflect.DeepEqual(got.Status.AcceptedNames, crd.Spec.Names) {
		t.Errorf("accepted names %+v, want %+v", got.Status.AcceptedNames, crd.Spec.Names)
	}
	if hasCondition(apiextensionsv1.NonStructuralSchema, apiextensionsv1.ConditionTrue, reasonViolations, "")(got) {
		t.Errorf("a structural CRD has a NonStructuralSchema condition: %+v", got.Status.Conditions)
	}
}

// TestNameConflicts: a CRD asking for a name another CRD of its group
// has is not given it, nor established, until that CRD goes; a CRD of
// another group may have the same name.
func TestNameConflicts(t *testing.T) {
	widgets := given(newCRD("example.com", names("widgets", "Widget", "w")))
	f := newFakes([]runtime.Object{widgets})
	start(t, f)
	crds := f.crds.ApiextensionsV1().CustomResourceDefinitions()
	ctx := context.Background()

	gadgets := newCRD("example.com", names("gadgets", "Gadget", "w"))
	if _, err := crds.Create(ctx, gadgets, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := await(t, f.crds, gadgets.Name, "the short name clash reported",
		hasCondition(apiextensionsv1.NamesAccepted, apiextensionsv1.ConditionFalse, reasonShortNamesConflict, `"w" is already in use`))
	if !hasCondition(apiextensionsv1.Established, apiextensionsv1.ConditionFalse, reasonNotAccepted, messageNotAccepted)(got) {
		t.Errorf("conditions %+v, want Established False NotAccepted", got.Status.Conditions)
	}
	if want := names("gadgets", "Gadget"); !reflect.DeepEqual(got.Status.AcceptedNames, want) {
		t.Errorf("accepted names %+v, want %+v", got.Status.AcceptedNames, want)
	}

	things := newCRD("other.io", names("things", "Thing", "w"))
	if _, err := crds.Create(ctx, things, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	await(t, f.crds, things.Name, "a CRD of another group established with the same short name",
		hasCondition(apiextensionsv1.Established, apiextensionsv1.ConditionTrue, reasonInitialNamesAccepted, messageInitialNamesAccepted))

	if err := crds.Delete(ctx, widgets.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got = await(t, f.crds, gadgets.Name, "the CRD established once the other let go of the name",
		hasCondition(apiextensionsv1.Established, apiextensionsv1.ConditionTrue, reasonInitialNamesAccepted, messageInitialNamesAccepted))
	if !reflect.DeepEqual(got.Status.AcceptedNames, gadgets.Spec.Names) {
		t.Errorf("accepted names %+v, want %+v", got.Status.AcceptedNames, gadgets.Spec.Names)
	}
}

// TestNonStructuralSchemaCondition: the condition comes with a version
// whose schema is not structural and goes with it.
func TestNonStructuralSchemaCondition(t *testing.T) {
	f := newFakes(nil)
	start(t, f)
	crds := f.crds.ApiextensionsV1().CustomResourceDefinitions()
	ctx := context.Background()
	crd := newCRD("example.com", names("widgets", "Widget"))
	crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: "v2", Served: true, Schema: nonStructuralSchema()})
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	await(t, f.crds, crd.Name, "the NonStructuralSchema condition",
		hasCondition(apiextensionsv1.NonStructuralSchema, apiextensionsv1.ConditionTrue, reasonViolations, nonStructuralMessage))

	cur, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Versions = cur.Spec.Versions[:1]
	if _, err := crds.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := await(t, f.crds, crd.Name, "the NonStructuralSchema condition gone", func(crd *apiextensionsv1.CustomResourceDefinition) bool {
		return !slices.ContainsFunc(crd.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
			return c.Type == apiextensionsv1.NonStructuralSchema
		})
	})
	if !hasCondition(apiextensionsv1.Established, apiextensionsv1.ConditionTrue, reasonInitialNamesAccepted, messageInitialNamesAccepted)(got) {
		t.Errorf("conditions %+v, want Established True", got.Status.Conditions)
	}
}

// TestDeletedCRDLosesItsInstances: the controller deletes the custom
// resources of a deleted CRD in every namespace, leaves other resources'
// alone, and then removes the finalizer.
func TestDeletedCRDLosesItsInstances(t *testing.T) {
	crd := deleting(withCondition(given(newCRD("example.com", names("widgets", "Widget"))),
		apiextensionsv1.Established, apiextensionsv1.ConditionTrue, reasonInitialNamesAccepted))
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	gadgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}
	f := newFakes([]runtime.Object{crd},
		instance("example.com/v1", "Widget", "a", "w1"),
		instance("example.com/v1", "Widget", "a", "w2"),
		instance("example.com/v1", "Widget", "b", "w3"),
		instance("example.com/v1", "Gadget", "a", "g1"),
	)
	start(t, f)
	got := await(t, f.crds, crd.Name, "the finalizer removed", func(crd *apiextensionsv1.CustomResourceDefinition) bool {
		return len(crd.Finalizers) == 0
	})
	if !hasCondition(apiextensionsv1.Terminating, apiextensionsv1.ConditionFalse, reasonDeletionCompleted, messageDeletionCompleted)(got) {
		t.Errorf("conditions %+v, want Terminating False InstanceDeletionCompleted", got.Status.Conditions)
	}
	if left := f.remaining(t, widgets); len(left) != 0 {
		t.Errorf("widgets left: %v", left)
	}
	if left := f.remaining(t, gadgets); !slices.Equal(left, []string{"a/g1"}) {
		t.Errorf("gadgets left: %v, want a/g1", left)
	}
	if ns := f.deleteCollections(widgets); !slices.Equal(ns, []string{"a", "b"}) {
		t.Errorf("deletecollections of widgets in %q, want a and b once each", ns)
	}
}
