package crd

import (
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestAcceptNames(t *testing.T) {
	const g = "example.com"
	widgets := given(newCRD(g, names("widgets", "Widget", "w")))
	tests := []struct {
		name    string
		crd     *apiextensionsv1.CustomResourceDefinition
		others  []*apiextensionsv1.CustomResourceDefinition
		given   apiextensionsv1.CustomResourceDefinitionNames
		reason  string
		message string
	}{
		{
			name:   "no other CRD: every name given",
			crd:    newCRD(g, names("gadgets", "Gadget", "g")),
			given:  names("gadgets", "Gadget", "g"),
			reason: reasonNoConflicts, message: messageNoConflicts,
		},
		{
			name:   "no clash with another CRD of the group",
			crd:    newCRD(g, names("gadgets", "Gadget", "g")),
			others: []*apiextensionsv1.CustomResourceDefinition{widgets},
			given:  names("gadgets", "Gadget", "g"),
			reason: reasonNoConflicts, message: messageNoConflicts,
		},
		{
			name:   "its own names are no clash",
			crd:    given(newCRD(g, names("widgets", "Widget", "w"))),
			others: []*apiextensionsv1.CustomResourceDefinition{given(newCRD(g, names("widgets", "Widget", "w")))},
			given:  names("widgets", "Widget", "w"),
			reason: reasonNoConflicts, message: messageNoConflicts,
		},
		{
			name:   "plural taken as another's plural",
			crd:    newCRD(g, apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"}),
			others: []*apiextensionsv1.CustomResourceDefinition{widgets},
			given:  apiextensionsv1.CustomResourceDefinitionNames{Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"},
			reason: reasonPluralConflict, message: `"widgets" is already in use`,
		},
		{
			name:   "plural taken as another's short name",
			crd:    newCRD(g, apiextensionsv1.CustomResourceDefinitionNames{Plural: "w", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"}),
			others: []*apiextensionsv1.CustomResourceDefinition{widgets},
			given:  apiextensionsv1.CustomResourceDefinitionNames{Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"},
			reason: reasonPluralConflict, message: `"w" is already in use`,
		},
		{
			name:   "singular taken as another's singular",
			crd:    newCRD(g, apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "widget", Kind: "Gadget", ListKind: "GadgetList"}),
			others: []*apiextensionsv1.CustomResourceDefinition{widgets},
			given:  apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Kind: "Gadget", ListKind: "GadgetList"},
			reason: reasonSingularConflict, message: `"widget" is already in use`,
		},
		{
			name:   "short name taken as another's plural",
			crd:    newCRD(g, names("gadgets", "Gadget", "widgets")),
			others: []*apiextensionsv1.CustomResourceDefinition{widgets},
			given:  names("gadgets", "Gadget"),
			reason: reasonShortNamesConflict, message: `"widgets" is already in use`,
		},
		{
			name:   "two short names taken",
			crd:    newCRD(g, names("gadgets", "Gadget", "w", "g", "widget")),
			others: []*apiextensionsv1.CustomResourceDefinition{widgets},
			given:  names("gadgets", "Gadget"),
			reason: reasonShortNamesConflict, message: `["w" is already in use, "widget" is already in use]`,
		},
		{
			name:   "kind taken as another's kind",
			crd:    newCRD(g, apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Widget", ListKind: "GadgetList"}),
			others: []*apiextensionsv1.CustomResourceDefinition{widgets},
			given:  apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", ListKind: "GadgetList"},
			reason: reasonKindConflict, message: `"Widget" is already in use`,
		},
		{
			name:   "listKind taken as another's listKind",
			crd:    newCRD(g, apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "WidgetList"}),
			others: []*apiextensionsv1.CustomResourceDefinition{widgets},
			given:  apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget"},
			reason: reasonListKindConflict, message: `"WidgetList" is already in use`,
		},
		{
			name:   "kind taken as another's listKind",
			crd:    newCRD(g, apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "WidgetList", ListKind: "GadgetList"}),
			others: []*apiextensionsv1.CustomResourceDefinition{widgets},
			given:  apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", ListKind: "GadgetList"},
			reason: reasonKindConflict, message: `"WidgetList" is already in use`,
		},
		{
			name:   "a kind is no clash with a resource name",
			crd:    newCRD(g, apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "widget", ListKind: "GadgetList"}),
			others: []*apiextensionsv1.CustomResourceDefinition{widgets},
			given:  apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "widget", ListKind: "GadgetList"},
			reason: reasonNoConflicts, message: messageNoConflicts,
		},
		{
			name:   "names asked for but not yet given are not taken",
			crd:    newCRD(g, names("widgets", "Widget", "w")),
			others: []*apiextensionsv1.CustomResourceDefinition{newCRD(g, names("widgets", "Widget", "w"))},
			given:  names("widgets", "Widget", "w"),
			reason: reasonNoConflicts, message: messageNoConflicts,
		},
		{
			name:   "the last clash names the reason",
			crd:    newCRD(g, names("widgets", "Widget")),
			others: []*apiextensionsv1.CustomResourceDefinition{widgets},
			given:  apiextensionsv1.CustomResourceDefinitionNames{},
			reason: reasonListKindConflict, message: `"WidgetList" is already in use`,
		},
		{
			name: "a clash keeps the name given before; the others change",
			crd: func() *apiextensionsv1.CustomResourceDefinition {
				crd := given(newCRD(g, names("gadgets", "Gadget", "g")))
				crd.Spec.Names.ShortNames = []string{"g", "w"}
				crd.Spec.Names.Categories = []string{"all"}
				crd.Spec.Names.ListKind = "Gadgets"
				return crd
			}(),
			others: []*apiextensionsv1.CustomResourceDefinition{widgets},
			given: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", ShortNames: []string{"g"},
				Kind: "Gadget", ListKind: "Gadgets", Categories: []string{"all"}},
			reason: reasonShortNamesConflict, message: `"w" is already in use`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			group := append([]*apiextensionsv1.CustomResourceDefinition{tt.crd}, tt.others...)
			got, cond := acceptNames(tt.crd, group)
			if !reflect.DeepEqual(got, tt.given) {
				t.Errorf("given %+v, want %+v", got, tt.given)
			}
			wantStatus := apiextensionsv1.ConditionFalse
			if tt.reason == reasonNoConflicts {
				wantStatus = apiextensionsv1.ConditionTrue
			}
			if cond.Type != apiextensionsv1.NamesAccepted || cond.Status != wantStatus || cond.Reason != tt.reason || cond.Message != tt.message {
				t.Errorf("condition %+v, want %s %s %q", cond, wantStatus, tt.reason, tt.message)
			}
		})
	}
}
