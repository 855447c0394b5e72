package crd

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"orch/internal/worker"
)

var widgetsV1 = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// establishedCRD is crd given its names and established.
func establishedCRD(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	return withCondition(given(crd), apiextensionsv1.Established, apiextensionsv1.ConditionTrue, reasonInitialNamesAccepted)
}

// finalizeOnce runs one finalize of CRD name as it is in f and returns
// its result and the CRD afterwards.
func finalizeOnce(t *testing.T, c *Controller, f *fakes, name string) (worker.Result, *apiextensionsv1.CustomResourceDefinition, error) {
	t.Helper()
	crds := f.crds.ApiextensionsV1().CustomResourceDefinitions()
	crd, err := crds.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, ferr := c.finalize(context.Background(), crd)
	after, err := crds.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res, after, ferr
}

func terminatingCondition(crd *apiextensionsv1.CustomResourceDefinition) apiextensionsv1.CustomResourceDefinitionCondition {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Terminating {
			return c
		}
	}
	return apiextensionsv1.CustomResourceDefinitionCondition{}
}

func TestFinalize(t *testing.T) {
	notServed := establishedCRD(newCRD("example.com", names("widgets", "Widget")))
	notServed.Spec.Versions[0].Served = false
	failingDelete := func(f *fakes) {
		f.metadata.PrependReactor("delete-collection", "widgets", func(a clienttesting.Action) (bool, runtime.Object, error) {
			if a.GetNamespace() == "b" {
				return true, nil, errors.New("etcd is on fire")
			}
			return false, nil, nil
		})
	}
	tests := []struct {
		name  string
		crd   *apiextensionsv1.CustomResourceDefinition
		setup func(*fakes)
		// status, reason and message (a prefix) of the Terminating condition.
		status           apiextensionsv1.ConditionStatus
		reason, message  string
		finalized        bool
		failed, terminal bool
		deletesIn        []string
		widgetsLeft      []string
	}{
		{
			name: "instances in two namespaces", crd: establishedCRD(newCRD("example.com", names("widgets", "Widget"))),
			status: apiextensionsv1.ConditionFalse, reason: reasonDeletionCompleted, message: messageDeletionCompleted,
			finalized: true, deletesIn: []string{"a", "b"},
		},
		{
			name: "never established", crd: given(newCRD("example.com", names("widgets", "Widget"))),
			status: apiextensionsv1.ConditionFalse, reason: reasonNeverEstablished, message: messageNeverEstablished,
			finalized: true, widgetsLeft: []string{"a/w1", "b/w2"},
		},
		{
			name: "a built-in resource", crd: establishedCRD(newCRD("networking.k8s.io", names("ingresses", "Ingress"))),
			status: apiextensionsv1.ConditionFalse, reason: reasonOverlappingBuiltIn, message: messageOverlappingBuiltIn,
			finalized: true, widgetsLeft: []string{"a/w1", "b/w2"},
		},
		{
			name: "upstream's overlapping resource", crd: establishedCRD(newCRD("apiextensions.k8s.io", names("customresourcedefinitions", "CustomResourceDefinition"))),
			status: apiextensionsv1.ConditionFalse, reason: reasonOverlappingBuiltIn, message: messageOverlappingBuiltIn,
			finalized: true, widgetsLeft: []string{"a/w1", "b/w2"},
		},
		{
			name: "no version served", crd: notServed,
			status: apiextensionsv1.ConditionTrue, reason: reasonDeletionFailed,
			message: `could not list instances: no version of CustomResourceDefinition "widgets.example.com" is served`,
			failed:  true, terminal: true, widgetsLeft: []string{"a/w1", "b/w2"},
		},
		{
			name: "a deletecollection fails", crd: establishedCRD(newCRD("example.com", names("widgets", "Widget"))), setup: failingDelete,
			status: apiextensionsv1.ConditionTrue, reason: reasonDeletionFailed, message: "could not issue all deletes: ",
			failed: true, deletesIn: []string{"a", "b"}, widgetsLeft: []string{"b/w2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakes([]runtime.Object{deleting(tt.crd)},
				instance("example.com/v1", "Widget", "a", "w1"),
				instance("example.com/v1", "Widget", "b", "w2"),
			)
			if tt.setup != nil {
				tt.setup(f)
			}
			res, after, err := finalizeOnce(t, newController(f), f, tt.crd.Name)
			if (err != nil) != tt.failed || worker.IsTerminal(err) != tt.terminal {
				t.Errorf("error %v; want failed %v, terminal %v", err, tt.failed, tt.terminal)
			}
			if res != (worker.Result{}) {
				t.Errorf("result %+v, want none", res)
			}
			cond := terminatingCondition(after)
			if cond.Status != tt.status || cond.Reason != tt.reason || !strings.HasPrefix(cond.Message, tt.message) {
				t.Errorf("Terminating %+v, want %s %s %q…", cond, tt.status, tt.reason, tt.message)
			}
			if finalized := len(after.Finalizers) == 0; finalized != tt.finalized {
				t.Errorf("finalizers %v; want finalized %v", after.Finalizers, tt.finalized)
			}
			if ns := f.deleteCollections(widgetsV1); !slices.Equal(ns, tt.deletesIn) {
				t.Errorf("deletecollections in %q, want %q", ns, tt.deletesIn)
			}
			if left := f.remaining(t, widgetsV1); !slices.Equal(left, tt.widgetsLeft) {
				t.Errorf("widgets left %v, want %v", left, tt.widgetsLeft)
			}
		})
	}
}

// TestFinalizeWaitsForInstances: an instance its own finalizer holds
// keeps the CRD's finalizer, and finalize asks to look again later;
// once it is gone the finalizer is removed.
func TestFinalizeWaitsForInstances(t *testing.T) {
	crd := deleting(establishedCRD(newCRD("example.com", names("widgets", "Widget"))))
	f := newFakes([]runtime.Object{crd},
		instance("example.com/v1", "Widget", "a", "w1"),
		instance("example.com/v1", "Widget", "a", "held", "example.com/cleanup"),
	)
	c := newController(f)

	res, after, err := finalizeOnce(t, c, f, crd.Name)
	if err != nil || res != (worker.Result{After: instancePoll}) {
		t.Fatalf("result %+v, %v; want to look again in %v", res, err, instancePoll)
	}
	if cond := terminatingCondition(after); cond.Status != apiextensionsv1.ConditionTrue || cond.Reason != reasonDeletionInProgress || cond.Message != messageDeletionInProgress {
		t.Errorf("Terminating %+v, want True %s", cond, reasonDeletionInProgress)
	}
	if len(after.Finalizers) == 0 {
		t.Errorf("the finalizer was removed while an instance remains")
	}
	if left := f.remaining(t, widgetsV1); !slices.Equal(left, []string{"a/held"}) {
		t.Errorf("widgets left %v, want a/held", left)
	}

	if err := f.metadata.Tracker().Delete(widgetsV1, "a", "held"); err != nil {
		t.Fatal(err)
	}
	res, after, err = finalizeOnce(t, c, f, crd.Name)
	if err != nil || res != (worker.Result{}) {
		t.Fatalf("result %+v, %v; want done", res, err)
	}
	if cond := terminatingCondition(after); cond.Status != apiextensionsv1.ConditionFalse || cond.Reason != reasonDeletionCompleted {
		t.Errorf("Terminating %+v, want False %s", cond, reasonDeletionCompleted)
	}
	if len(after.Finalizers) != 0 {
		t.Errorf("finalizers %v remain", after.Finalizers)
	}
}
