package apiserver

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// selection filters objects by label and field selectors.
type selection struct {
	labels labels.Selector
	fields fields.Selector
	rs     *resourceStore
}

func (rs *resourceStore) newSelection(labelSelector, fieldSelector string) (selection, error) {
	sel := selection{labels: labels.Everything(), fields: fields.Everything(), rs: rs}
	var err error
	if labelSelector != "" {
		if sel.labels, err = labels.Parse(labelSelector); err != nil {
			return sel, badRequest("unable to parse labelSelector %q: %v", labelSelector, err)
		}
	}
	if fieldSelector != "" {
		if sel.fields, err = fields.ParseSelector(fieldSelector); err != nil {
			return sel, badRequest("unable to parse fieldSelector %q: %v", fieldSelector, err)
		}
		sample := rs.fieldSet(rs.res.New())
		for _, req := range sel.fields.Requirements() {
			if _, ok := sample[req.Field]; !ok {
				return sel, badRequest("field label not supported: %s", req.Field)
			}
		}
	}
	return sel, nil
}

// everything is true when the selection matches every object.
func (s selection) everything() bool { return s.labels.Empty() && s.fields.Empty() }

func (s selection) matches(obj runtime.Object) bool {
	if s.everything() {
		return true
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	if !s.labels.Matches(labels.Set(accessor.GetLabels())) {
		return false
	}
	return s.fields.Empty() || s.fields.Matches(s.rs.fieldSet(obj))
}

// fieldSet is every selectable field of obj.
func (rs *resourceStore) fieldSet(obj runtime.Object) fields.Set {
	set := fields.Set{}
	if accessor, err := meta.Accessor(obj); err == nil {
		set["metadata.name"] = accessor.GetName()
		if rs.res.Namespaced {
			set["metadata.namespace"] = accessor.GetNamespace()
		}
	}
	if rs.res.SelectableFields != nil {
		for k, v := range rs.res.SelectableFields(obj) {
			set[k] = v
		}
	}
	return set
}

// andName narrows a field selector to one object name.
func andName(sel fields.Selector, name string) fields.Selector {
	return fields.AndSelectors(sel, fields.OneTermEqualSelector("metadata.name", name))
}
