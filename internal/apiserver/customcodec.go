package apiserver

import (
	"fmt"
	"maps"
	"sync"

	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
)

// customCodec is how a custom resource store keeps its objects: JSON in
// storage, at the CRD's storage version, converted to the store's version
// on the way out and to the storage version on the way in.
type customCodec struct {
	storage  schema.GroupVersion
	strategy apiextensionsv1.ConversionStrategyType
	// types types the fields for server-side apply, from the CRD's schema.
	types func() (managedfields.TypeConverter, error)
	// webhook converts for the Webhook strategy.
	webhook converter

	mu     sync.Mutex
	fields map[string]*managedfields.FieldManager // by subresource
}

func newCustomCodec(crd *apiextensionsv1.CustomResourceDefinition, version string) (*customCodec, error) {
	storageVersion, err := apiextensionshelpers.GetCRDStorageVersion(crd)
	if err != nil {
		return nil, err
	}
	strategy := apiextensionsv1.NoneConverter
	if crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy != "" {
		strategy = crd.Spec.Conversion.Strategy
	}
	return &customCodec{storage: schema.GroupVersion{Group: crd.Spec.Group, Version: storageVersion},
		strategy: strategy, fields: map[string]*managedfields.FieldManager{}}, nil
}

// convert changes u's version to gv in place: the None strategy changes
// only apiVersion, the Webhook strategy asks the CRD's webhook, as upstream.
func (c *customCodec) convert(u *unstructured.Unstructured, gv schema.GroupVersion) error {
	if u.GetAPIVersion() == gv.String() {
		return nil
	}
	if c.strategy == apiextensionsv1.WebhookConverter && c.webhook != nil {
		return c.webhook(u, gv)
	}
	u.SetAPIVersion(gv.String())
	return nil
}

// decode turns a stored value into an object of rs's version, pruned and
// defaulted as upstream reads custom resources.
func (c *customCodec) decode(rs *resourceStore, data []byte) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, err
	}
	if err := c.convert(u, rs.gvk.GroupVersion()); err != nil {
		return nil, err
	}
	if rs.res.Prune != nil {
		rs.res.Prune(u)
	}
	if rs.res.Default != nil {
		rs.res.Default(u)
	}
	return u, nil
}

// encode serializes obj at the storage version. The caller has removed
// the resourceVersion.
func (c *customCodec) encode(obj runtime.Object) ([]byte, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("a custom resource store was given a %T", obj)
	}
	stored := &unstructured.Unstructured{Object: maps.Clone(u.Object)}
	if err := c.convert(stored, c.storage); err != nil {
		return nil, err
	}
	return stored.MarshalJSON()
}

// fieldManager is the server-side apply field manager of rs (one per
// subresource), typing fields by the CRD's schema as upstream (by
// deduction when the schema is not structural).
func (c *customCodec) fieldManager(rs *resourceStore, subresource string) (*managedfields.FieldManager, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.fields[subresource]; ok {
		return m, nil
	}
	types, err := c.types()
	if err != nil {
		return nil, fmt.Errorf("the schema of %s for server-side apply: %w", rs.gvk, err)
	}
	m, err := managedfields.NewDefaultCRDFieldManager(types,
		customConvertor{c}, customDefaulter{rs}, customCreater{}, rs.gvk, rs.gvk.GroupVersion(), subresource, resetFields(rs, subresource))
	if err != nil {
		return nil, fmt.Errorf("field manager for %s: %w", rs.gvk, err)
	}
	c.fields[subresource] = m
	return m, nil
}

// customConvertor converts custom resources between versions for the
// field manager.
type customConvertor struct{ c *customCodec }

func (v customConvertor) Convert(in, out, context interface{}) error {
	src, ok1 := in.(*unstructured.Unstructured)
	dst, ok2 := out.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return fmt.Errorf("cannot convert %T to %T", in, out)
	}
	dst.Object = runtime.DeepCopyJSON(src.Object)
	return nil
}

func (v customConvertor) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("cannot convert %T", in)
	}
	gvk, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{u.GroupVersionKind()})
	if !ok {
		return nil, fmt.Errorf("%v is not a version of %s", target, u.GroupVersionKind())
	}
	out := u.DeepCopy()
	if err := v.c.convert(out, gvk.GroupVersion()); err != nil {
		return nil, err
	}
	return out, nil
}

func (v customConvertor) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

type customDefaulter struct{ rs *resourceStore }

func (d customDefaulter) Default(obj runtime.Object) {
	if d.rs.res.Default != nil {
		d.rs.res.Default(obj)
	}
}

type customCreater struct{}

func (customCreater) New(kind schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kind)
	return u, nil
}
