// Package apfbootstrap keeps upstream's API priority and fairness
// configuration in a cluster, through the API, as kube-apiserver's
// priority-and-fairness-config-producer does: the mandatory and suggested
// FlowSchemas and PriorityLevelConfigurations of
// k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap.
//
//   - A mandatory object ("exempt", "catch-all") is created when missing and
//     its spec put back when it differs (the exempt level keeps its
//     spec.exempt), with apf.kubernetes.io/autoupdate-spec "true".
//   - A suggested object is created when missing; its spec is brought back
//     to the bootstrap one only while it auto-updates: the annotation says
//     "true", or, without a readable one, it is at generation 1. The
//     annotation is then written to say what was decided, so an object a
//     user changed (generation > 1) or set to "false" is left alone.
//   - An object that is no longer mandatory or suggested is deleted when its
//     annotation says "true".
//
// Ensure makes one pass; Run repeats it.
package apfbootstrap

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/client-go/kubernetes"

	"orch/internal/apiserver/registry/flowschemas"
	"orch/internal/apiserver/registry/prioritylevelconfigurations"
)

// fieldManager is upstream's manager of what the bootstrap writes.
const fieldManager = "api-priority-and-fairness-config-producer-v1"

// Ensure makes one pass over the bootstrap configuration in upstream's
// order: the suggested priority levels and flow schemas, the mandatory
// ones, then the removal of auto-updated flow schemas and priority levels
// that are no longer part of it. It stops at the first error; a write that
// conflicts with another is left for the next pass. Running it again
// changes nothing.
func Ensure(ctx context.Context, client kubernetes.Interface) error {
	levels, schemas := levelKind(client), schemaKind(client)
	// What exists is read once: the steps touch disjoint names.
	haveLevels, err := levels.list(ctx)
	if err != nil {
		return fmt.Errorf("cannot list the %ss: %w", levels.name, err)
	}
	haveSchemas, err := schemas.list(ctx)
	if err != nil {
		return fmt.Errorf("cannot list the %ss: %w", schemas.name, err)
	}
	steps := []func() error{
		func() error {
			return ensureAll(ctx, levels, haveLevels, bootstrap.SuggestedPriorityLevelConfigurations, false)
		},
		func() error { return ensureAll(ctx, schemas, haveSchemas, bootstrap.SuggestedFlowSchemas, false) },
		func() error {
			return ensureAll(ctx, levels, haveLevels, bootstrap.MandatoryPriorityLevelConfigurations, true)
		},
		func() error { return ensureAll(ctx, schemas, haveSchemas, bootstrap.MandatoryFlowSchemas, true) },
		func() error {
			return removeUnwanted(ctx, schemas, haveSchemas, bootstrap.MandatoryFlowSchemas, bootstrap.SuggestedFlowSchemas)
		},
		func() error {
			return removeUnwanted(ctx, levels, haveLevels, bootstrap.MandatoryPriorityLevelConfigurations, bootstrap.SuggestedPriorityLevelConfigurations)
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// Run calls Ensure at once and then every interval until ctx ends, logging
// what fails; until a first pass succeeds it tries again every second, as
// upstream's apiserver does after it starts.
func Run(ctx context.Context, client kubernetes.Interface, interval time.Duration, log *slog.Logger) {
	wait := time.Second
	for {
		if err := Ensure(ctx, client); err == nil {
			wait = interval
		} else if ctx.Err() == nil {
			log.Warn("cannot ensure the API priority and fairness configuration; retrying", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// object is a *FlowSchema or a *PriorityLevelConfiguration.
type object interface {
	comparable
	metav1.Object
	runtime.Object
}

// client is the part of a typed client-go client Ensure uses.
type client[T object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// kind is what Ensure needs to know of flow schemas or of priority levels.
type kind[T object] struct {
	name   string // "FlowSchema"
	client client[T]
	list   func(context.Context) ([]T, error)
	// withSpec returns a copy of current with want's spec.
	withSpec func(current, want T) T
	// specEqual is whether current has want's spec once defaulted (the
	// exempt level may have any spec.exempt numbers).
	specEqual func(want, current T) bool
}

func schemaKind(c kubernetes.Interface) kind[*flowcontrolv1.FlowSchema] {
	api := c.FlowcontrolV1().FlowSchemas()
	return kind[*flowcontrolv1.FlowSchema]{
		name: "FlowSchema", client: api,
		list: func(ctx context.Context) ([]*flowcontrolv1.FlowSchema, error) {
			list, err := api.List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			return pointers(list.Items), nil
		},
		withSpec: func(current, want *flowcontrolv1.FlowSchema) *flowcontrolv1.FlowSchema {
			out := current.DeepCopy()
			want.Spec.DeepCopyInto(&out.Spec)
			return out
		},
		specEqual: func(want, current *flowcontrolv1.FlowSchema) bool {
			defaulted := want.DeepCopy()
			flowschemas.Resource().Default(defaulted)
			return equality.Semantic.DeepEqual(&defaulted.Spec, &current.Spec)
		},
	}
}

func levelKind(c kubernetes.Interface) kind[*flowcontrolv1.PriorityLevelConfiguration] {
	api := c.FlowcontrolV1().PriorityLevelConfigurations()
	return kind[*flowcontrolv1.PriorityLevelConfiguration]{
		name: "PriorityLevelConfiguration", client: api,
		list: func(ctx context.Context) ([]*flowcontrolv1.PriorityLevelConfiguration, error) {
			list, err := api.List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			return pointers(list.Items), nil
		},
		withSpec: func(current, want *flowcontrolv1.PriorityLevelConfiguration) *flowcontrolv1.PriorityLevelConfiguration {
			out := current.DeepCopy()
			want.Spec.DeepCopyInto(&out.Spec)
			return out
		},
		specEqual: func(want, current *flowcontrolv1.PriorityLevelConfiguration) bool {
			defaulted := want.DeepCopy()
			prioritylevelconfigurations.Resource().Default(defaulted)
			if want.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt {
				if current.Spec.Exempt == nil || defaulted.Spec.Exempt == nil {
					return false
				}
				defaulted.Spec.Exempt.NominalConcurrencyShares = current.Spec.Exempt.NominalConcurrencyShares
				defaulted.Spec.Exempt.LendablePercent = current.Spec.Exempt.LendablePercent
			}
			return equality.Semantic.DeepEqual(&defaulted.Spec, &current.Spec)
		},
	}
}

func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// ensureAll ensures each of wants, given what exists.
func ensureAll[T object](ctx context.Context, k kind[T], existing, wants []T, mandatory bool) error {
	byName := map[string]T{}
	for _, o := range existing {
		byName[o.GetName()] = o
	}
	for _, want := range wants {
		if err := ensure(ctx, k, want, byName[want.GetName()], mandatory); err != nil {
			return err
		}
	}
	return nil
}

// ensure creates want when current is missing, or updates current when
// revise says so.
func ensure[T object](ctx context.Context, k kind[T], want, current T, mandatory bool) error {
	var missing T
	name := want.GetName()
	if current == missing {
		_, err := k.client.Create(ctx, want.DeepCopyObject().(T), metav1.CreateOptions{FieldManager: fieldManager})
		if !apierrors.IsAlreadyExists(err) {
			if err != nil {
				return fmt.Errorf("cannot create the %s %q: %w", k.name, name, err)
			}
			return nil
		}
		// Made meanwhile: check what it is.
		if current, err = k.client.Get(ctx, name, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("cannot read the %s %q: %w", k.name, name, err)
		}
	}
	revised, ok := revise(k, current, want, mandatory)
	if !ok {
		return nil
	}
	if _, err := k.client.Update(ctx, revised, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("cannot update the %s %q: %w", k.name, name, err)
	}
	return nil
}

// revise returns what current should become, and whether it should change:
// want's spec when current auto-updates (always, for a mandatory object)
// and differs, and the autoupdate-spec annotation saying whether it does.
func revise[T object](k kind[T], current, want T, mandatory bool) (T, bool) {
	autoUpdate := mandatory || autoUpdates(current)
	value, ok := current.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey]
	parsed, err := strconv.ParseBool(value)
	fixAnnotation := !ok || err != nil || parsed != autoUpdate
	replaceSpec := autoUpdate && !k.specEqual(want, current)
	if !fixAnnotation && !replaceSpec {
		var unchanged T
		return unchanged, false
	}
	var revised T
	if replaceSpec {
		revised = k.withSpec(current, want)
	} else {
		revised = current.DeepCopyObject().(T)
	}
	if fixAnnotation {
		annotations := revised.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[flowcontrolv1.AutoUpdateAnnotationKey] = strconv.FormatBool(autoUpdate)
		revised.SetAnnotations(annotations)
	}
	return revised, true
}

// autoUpdates is whether a suggested object takes the bootstrap spec: as
// its annotation says, or, without a readable one, while nobody changed
// its spec since it was created (generation 1).
func autoUpdates(o metav1.Object) bool {
	if auto, err := strconv.ParseBool(o.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey]); err == nil {
		return auto
	}
	return o.GetGeneration() == 1
}

// removeUnwanted deletes those of existing that are in none of the
// bootstrap lists and whose annotation says they auto-update.
func removeUnwanted[T object](ctx context.Context, k kind[T], existing []T, lists ...[]T) error {
	wanted := map[string]bool{}
	for _, list := range lists {
		for _, o := range list {
			wanted[o.GetName()] = true
		}
	}
	for _, o := range existing {
		if wanted[o.GetName()] {
			continue
		}
		if auto, err := strconv.ParseBool(o.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey]); err != nil || !auto {
			continue
		}
		if err := k.client.Delete(ctx, o.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("cannot delete the %s %q, no longer part of the bootstrap configuration: %w", k.name, o.GetName(), err)
		}
	}
	return nil
}
