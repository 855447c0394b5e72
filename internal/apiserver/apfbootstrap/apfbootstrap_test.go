package apfbootstrap

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

const annotation = flowcontrolv1.AutoUpdateAnnotationKey

// schema is a copy of a bootstrap flow schema, changed by modify, with the
// given annotation value ("" for none) and generation.
func schema(from *flowcontrolv1.FlowSchema, value string, generation int64, modify func(*flowcontrolv1.FlowSchema)) *flowcontrolv1.FlowSchema {
	fs := from.DeepCopy()
	fs.Annotations, fs.Generation = annotate(value), generation
	modify(fs)
	return fs
}

func level(from *flowcontrolv1.PriorityLevelConfiguration, value string, generation int64, modify func(*flowcontrolv1.PriorityLevelConfiguration)) *flowcontrolv1.PriorityLevelConfiguration {
	pl := from.DeepCopy()
	pl.Annotations, pl.Generation = annotate(value), generation
	modify(pl)
	return pl
}

func annotate(value string) map[string]string {
	if value == "" {
		return nil
	}
	return map[string]string{annotation: value}
}

func unchangedFS(*flowcontrolv1.FlowSchema)                 {}
func unchangedPL(*flowcontrolv1.PriorityLevelConfiguration) {}

func precedence(p int32) func(*flowcontrolv1.FlowSchema) {
	return func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = p }
}

func shares(n int32) func(*flowcontrolv1.PriorityLevelConfiguration) {
	return func(pl *flowcontrolv1.PriorityLevelConfiguration) {
		pl.Spec.Limited.NominalConcurrencyShares = ptr.To(n)
	}
}

func named(name string) func(*flowcontrolv1.FlowSchema) {
	return func(fs *flowcontrolv1.FlowSchema) { fs.Name = name }
}

func namedLevel(name string) func(*flowcontrolv1.PriorityLevelConfiguration) {
	return func(pl *flowcontrolv1.PriorityLevelConfiguration) { pl.Name = name }
}

// state is what a test expects of one object after Ensure: its annotation
// value and the spec it has (nil: the object is gone).
type state struct {
	annotation string
	spec       any
}

func TestEnsure(t *testing.T) {
	globalDefault, catchAll := bootstrap.SuggestedFlowSchemaGlobalDefault, bootstrap.MandatoryFlowSchemaCatchAll
	workloadLow, exempt := bootstrap.SuggestedPriorityLevelConfigurationWorkloadLow, bootstrap.MandatoryPriorityLevelConfigurationExempt
	changedGlobalDefault := schema(globalDefault, "", 0, precedence(5000)).Spec
	changedWorkloadLow := level(workloadLow, "", 0, shares(7)).Spec
	exemptWithShares := level(exempt, "", 0, func(pl *flowcontrolv1.PriorityLevelConfiguration) {
		pl.Spec.Exempt.NominalConcurrencyShares = ptr.To[int32](10)
	}).Spec
	tests := []struct {
		name     string
		existing []runtime.Object
		schemas  map[string]state
		levels   map[string]state
	}{
		{"empty cluster: all made, auto-updating", nil,
			map[string]state{"global-default": {"true", globalDefault.Spec}, "catch-all": {"true", catchAll.Spec}},
			map[string]state{"workload-low": {"true", workloadLow.Spec}, "exempt": {"true", exempt.Spec}}},
		{"suggested, changed by a user who turned auto-update off: kept", []runtime.Object{
			schema(globalDefault, "false", 2, precedence(5000)), level(workloadLow, "false", 1, shares(7)),
		}, map[string]state{"global-default": {"false", changedGlobalDefault}},
			map[string]state{"workload-low": {"false", changedWorkloadLow}}},
		{"suggested, auto-updating, changed: put back", []runtime.Object{
			schema(globalDefault, "true", 3, precedence(5000)), level(workloadLow, "true", 3, shares(7)),
		}, map[string]state{"global-default": {"true", globalDefault.Spec}},
			map[string]state{"workload-low": {"true", workloadLow.Spec}}},
		{"suggested, no annotation, never changed since made: put back, auto-updating", []runtime.Object{
			schema(globalDefault, "", 1, precedence(5000)), level(workloadLow, "", 1, shares(7)),
		}, map[string]state{"global-default": {"true", globalDefault.Spec}},
			map[string]state{"workload-low": {"true", workloadLow.Spec}}},
		{"suggested, no readable annotation, changed since made: kept, no longer auto-updating", []runtime.Object{
			schema(globalDefault, "", 2, precedence(5000)), level(workloadLow, "maybe", 4, shares(7)),
		}, map[string]state{"global-default": {"false", changedGlobalDefault}},
			map[string]state{"workload-low": {"false", changedWorkloadLow}}},
		{"suggested, as bootstrapped but not annotated: annotated", []runtime.Object{
			schema(globalDefault, "", 1, unchangedFS), level(workloadLow, "", 2, unchangedPL),
		}, map[string]state{"global-default": {"true", globalDefault.Spec}},
			map[string]state{"workload-low": {"false", workloadLow.Spec}}},
		{"mandatory, changed with auto-update off: put back, auto-updating", []runtime.Object{
			schema(catchAll, "false", 7, func(fs *flowcontrolv1.FlowSchema) { fs.Spec.DistinguisherMethod = nil }),
			level(bootstrap.MandatoryPriorityLevelConfigurationCatchAll, "false", 7, shares(50)),
		}, map[string]state{"catch-all": {"true", catchAll.Spec}},
			map[string]state{"catch-all": {"true", bootstrap.MandatoryPriorityLevelConfigurationCatchAll.Spec}}},
		{"the exempt level keeps its exempt numbers", []runtime.Object{
			level(exempt, "true", 2, func(pl *flowcontrolv1.PriorityLevelConfiguration) {
				pl.Spec.Exempt.NominalConcurrencyShares = ptr.To[int32](10)
			}),
		}, nil, map[string]state{"exempt": {"true", exemptWithShares}}},
		{"the exempt level without its member gets it back", []runtime.Object{
			level(exempt, "true", 2, func(pl *flowcontrolv1.PriorityLevelConfiguration) { pl.Spec.Exempt = nil }),
		}, nil, map[string]state{"exempt": {"true", exempt.Spec}}},
		{"no longer bootstrapped: deleted only when auto-updating", []runtime.Object{
			schema(globalDefault, "true", 1, named("retired")),
			schema(globalDefault, "false", 1, named("kept-false")),
			schema(globalDefault, "", 1, named("kept-users")),
			schema(globalDefault, "yes", 1, named("kept-malformed")),
			level(workloadLow, "true", 1, namedLevel("retired")),
			level(workloadLow, "", 1, namedLevel("kept-users")),
		}, map[string]state{
			"retired": {}, "kept-false": {"false", globalDefault.Spec}, "kept-users": {"", globalDefault.Spec}, "kept-malformed": {"yes", globalDefault.Spec},
		}, map[string]state{"retired": {}, "kept-users": {"", workloadLow.Spec}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			client := fake.NewClientset(tt.existing...)
			if err := Ensure(ctx, client); err != nil {
				t.Fatal(err)
			}
			schemas, levels := stored(t, client)
			for name, want := range tt.schemas {
				checkState(t, "FlowSchema "+name, schemas[name], want)
			}
			for name, want := range tt.levels {
				checkState(t, "PriorityLevelConfiguration "+name, levels[name], want)
			}
			for _, fs := range append(append([]*flowcontrolv1.FlowSchema{}, bootstrap.MandatoryFlowSchemas...), bootstrap.SuggestedFlowSchemas...) {
				if schemas[fs.Name] == nil {
					t.Errorf("no FlowSchema %s", fs.Name)
				}
			}
			for _, pl := range append(append([]*flowcontrolv1.PriorityLevelConfiguration{}, bootstrap.MandatoryPriorityLevelConfigurations...), bootstrap.SuggestedPriorityLevelConfigurations...) {
				if levels[pl.Name] == nil {
					t.Errorf("no PriorityLevelConfiguration %s", pl.Name)
				}
			}

			// A second pass changes nothing.
			client.ClearActions()
			if err := Ensure(ctx, client); err != nil {
				t.Fatal(err)
			}
			for _, a := range client.Actions() {
				if a.GetVerb() != "list" {
					t.Errorf("second pass: %s %s", a.GetVerb(), a.GetResource().Resource)
				}
			}
		})
	}
}

// stored returns the flow schemas and priority levels in the fake, by
// name, as generic values: their annotation and spec.
func stored(t *testing.T, client *fake.Clientset) (schemas, levels map[string]*state) {
	t.Helper()
	ctx := context.Background()
	fss, err := client.FlowcontrolV1().FlowSchemas().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pls, err := client.FlowcontrolV1().PriorityLevelConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	schemas, levels = map[string]*state{}, map[string]*state{}
	for _, fs := range fss.Items {
		schemas[fs.Name] = &state{fs.Annotations[annotation], fs.Spec}
	}
	for _, pl := range pls.Items {
		levels[pl.Name] = &state{pl.Annotations[annotation], pl.Spec}
	}
	return schemas, levels
}

func checkState(t *testing.T, what string, got *state, want state) {
	t.Helper()
	switch {
	case want.spec == nil && got != nil:
		t.Errorf("%s is still there", what)
	case want.spec == nil:
	case got == nil:
		t.Errorf("%s is gone", what)
	case got.annotation != want.annotation:
		t.Errorf("%s: annotation %q, want %q", what, got.annotation, want.annotation)
	case !reflect.DeepEqual(got.spec, want.spec):
		t.Errorf("%s: spec %+v, want %+v", what, got.spec, want.spec)
	}
}

func TestEnsureErrors(t *testing.T) {
	boom := apierrors.NewInternalError(errors.New("boom"))
	tests := []struct {
		name     string
		existing []runtime.Object
		verb     string
		resource string
		err      error
		want     string // "" for no error
	}{
		{"create fails", nil, "create", "prioritylevelconfigurations", boom, `cannot create the PriorityLevelConfiguration "system"`},
		{"list fails", nil, "list", "flowschemas", boom, "cannot list the FlowSchemas"},
		{"update fails", []runtime.Object{schema(bootstrap.MandatoryFlowSchemaExempt, "true", 2, precedence(3))}, "update", "flowschemas", boom,
			`cannot update the FlowSchema "exempt"`},
		{"update conflicts: left for the next pass", []runtime.Object{schema(bootstrap.MandatoryFlowSchemaExempt, "true", 2, precedence(3))}, "update", "flowschemas",
			apierrors.NewConflict(flowcontrolv1.Resource("flowschemas"), "exempt", errors.New("changed")), ""},
		{"delete fails", []runtime.Object{level(bootstrap.SuggestedPriorityLevelConfigurationSystem, "true", 1, namedLevel("retired"))}, "delete", "prioritylevelconfigurations", boom,
			`cannot delete the PriorityLevelConfiguration "retired"`},
		{"already deleted", []runtime.Object{level(bootstrap.SuggestedPriorityLevelConfigurationSystem, "true", 1, namedLevel("retired"))}, "delete", "prioritylevelconfigurations",
			apierrors.NewNotFound(flowcontrolv1.Resource("prioritylevelconfigurations"), "retired"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(tt.existing...)
			client.PrependReactor(tt.verb, tt.resource, func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, tt.err })
			err := Ensure(context.Background(), client)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Ensure: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Ensure: %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// TestEnsureMadeMeanwhile: an object that the list missed but a create
// finds is read and revised.
func TestEnsureMadeMeanwhile(t *testing.T) {
	client := fake.NewClientset(schema(bootstrap.MandatoryFlowSchemaCatchAll, "false", 4, precedence(9999)))
	client.PrependReactor("list", "flowschemas", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, &flowcontrolv1.FlowSchemaList{}, nil
	})
	if err := Ensure(context.Background(), client); err != nil {
		t.Fatal(err)
	}
	fs, err := client.FlowcontrolV1().FlowSchemas().Get(context.Background(), "catch-all", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fs.Spec.MatchingPrecedence != 10000 || fs.Annotations[annotation] != "true" {
		t.Errorf("catch-all: precedence %d, annotation %q; want 10000 and true", fs.Spec.MatchingPrecedence, fs.Annotations[annotation])
	}
}

// TestRun: a first pass that fails is retried, and Run returns when its
// context ends.
func TestRun(t *testing.T) {
	client := fake.NewClientset()
	failed := false
	client.PrependReactor("list", "prioritylevelconfigurations", func(k8stesting.Action) (bool, runtime.Object, error) {
		if !failed {
			failed = true
			return true, nil, apierrors.NewServiceUnavailable("starting")
		}
		return false, nil, nil
	})
	made := make(chan struct{})
	client.PrependReactor("create", "flowschemas", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.CreateAction).GetObject().(*flowcontrolv1.FlowSchema).Name == flowcontrolv1.FlowSchemaNameCatchAll {
			close(made)
		}
		return false, nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, client, time.Hour, slog.New(slog.DiscardHandler))
	}()
	select {
	case <-made:
	case <-time.After(30 * time.Second):
		t.Fatal("the configuration was not made")
	}
	cancel()
	<-done

	schemas, levels := stored(t, client)
	var names []string
	for name := range schemas {
		names = append(names, name)
	}
	sort.Strings(names)
	if len(names) != len(bootstrap.MandatoryFlowSchemas)+len(bootstrap.SuggestedFlowSchemas) ||
		len(levels) != len(bootstrap.MandatoryPriorityLevelConfigurations)+len(bootstrap.SuggestedPriorityLevelConfigurations) {
		t.Errorf("flow schemas %v, %d priority levels", names, len(levels))
	}
}
