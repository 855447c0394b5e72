package crd

import (
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/sets"
)

// The reasons and messages of the NamesAccepted condition, upstream's.
const (
	reasonNoConflicts         = "NoConflicts"
	messageNoConflicts        = "no conflicts found"
	reasonPluralConflict      = "PluralConflict"
	reasonSingularConflict    = "SingularConflict"
	reasonShortNamesConflict  = "ShortNamesConflict"
	reasonKindConflict        = "KindConflict"
	reasonListKindConflict    = "ListKindConflict"
	messageNameAlreadyInUseFm = "%q is already in use"
)

// acceptNames decides which of the names crd asks for (spec.names) it is
// given, among group, the CRDs of its API group (crd itself may be one of
// them): a name it already has stays its own; a new resource name
// (plural, singular, short name) must not be a resource name another CRD
// of the group has been given, nor a new kind (kind, listKind) a kind.
// A name that clashes is not given: crd keeps the one it had, and the
// NamesAccepted condition is False with the reason of the last clash
// (checked in the order plural, singular, short names, kind, listKind).
// Categories are always given.
func acceptNames(crd *apiextensionsv1.CustomResourceDefinition, group []*apiextensionsv1.CustomResourceDefinition) (apiextensionsv1.CustomResourceDefinitionNames, apiextensionsv1.CustomResourceDefinitionCondition) {
	resources, kinds := takenNames(group)
	asked, had := crd.Spec.Names, crd.Status.AcceptedNames
	given := *had.DeepCopy()
	cond := apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue,
		Reason: reasonNoConflicts, Message: messageNoConflicts,
	}
	clash := func(reason string, err error) {
		cond.Status, cond.Reason, cond.Message = apiextensionsv1.ConditionFalse, reason, err.Error()
	}

	if err := free(asked.Plural, had.Plural, resources); err != nil {
		clash(reasonPluralConflict, err)
	} else {
		given.Plural = asked.Plural
	}
	if err := free(asked.Singular, had.Singular, resources); err != nil {
		clash(reasonSingularConflict, err)
	} else {
		given.Singular = asked.Singular
	}
	if !slices.Equal(asked.ShortNames, had.ShortNames) {
		var errs []error
		for _, s := range asked.ShortNames {
			if slices.Contains(had.ShortNames, s) {
				continue
			}
			if err := free(s, "", resources); err != nil {
				errs = append(errs, err)
			}
		}
		if err := utilerrors.NewAggregate(errs); err != nil {
			clash(reasonShortNamesConflict, err)
		} else {
			given.ShortNames = slices.Clone(asked.ShortNames)
		}
	}
	if err := free(asked.Kind, had.Kind, kinds); err != nil {
		clash(reasonKindConflict, err)
	} else {
		given.Kind = asked.Kind
	}
	if err := free(asked.ListKind, had.ListKind, kinds); err != nil {
		clash(reasonListKindConflict, err)
	} else {
		given.ListKind = asked.ListKind
	}
	given.Categories = slices.Clone(asked.Categories)
	return given, cond
}

// free returns an error when name, asked for in place of had, is taken.
func free(name, had string, taken sets.Set[string]) error {
	if name == had || !taken.Has(name) {
		return nil
	}
	return fmt.Errorf(messageNameAlreadyInUseFm, name)
}

// takenNames are the resource names (plural, singular, short names) and
// the kinds (kind, listKind) the CRDs of group have been given.
func takenNames(group []*apiextensionsv1.CustomResourceDefinition) (resources, kinds sets.Set[string]) {
	resources, kinds = sets.New[string](), sets.New[string]()
	for _, crd := range group {
		n := crd.Status.AcceptedNames
		resources.Insert(n.Plural, n.Singular)
		resources.Insert(n.ShortNames...)
		kinds.Insert(n.Kind, n.ListKind)
	}
	// A CRD not yet given a name leaves it empty; no name asked for is.
	resources.Delete("")
	kinds.Delete("")
	return resources, kinds
}
