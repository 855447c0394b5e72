package apiserver

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// fieldManagers tracks metadata.managedFields and merges server-side apply
// requests, one upstream FieldManager per resource and subresource.
type fieldManagers struct {
	scheme    *runtime.Scheme
	defaulter runtime.ObjectDefaulter

	once      sync.Once
	converter managedfields.TypeConverter

	mu       sync.Mutex
	managers map[string]*managedfields.FieldManager
}

func newFieldManagers(scheme *runtime.Scheme, defaulter runtime.ObjectDefaulter) *fieldManagers {
	return &fieldManagers{scheme: scheme, defaulter: defaulter, managers: map[string]*managedfields.FieldManager{}}
}

func (f *fieldManagers) get(rs *resourceStore, subresource string) (*managedfields.FieldManager, error) {
	if rs.custom != nil {
		return rs.custom.fieldManager(rs, subresource)
	}
	f.once.Do(func() { f.converter = newTypeConverter(f.scheme) })
	key := rs.gvk.String() + "/" + subresource
	f.mu.Lock()
	defer f.mu.Unlock()
	if m, ok := f.managers[key]; ok {
		return m, nil
	}
	m, err := managedfields.NewDefaultFieldManager(f.converter, f.scheme, f.defaulter, f.scheme,
		rs.gvk, rs.gvk.GroupVersion(), subresource, resetFields(rs, subresource))
	if err != nil {
		return nil, fmt.Errorf("field manager for %s: %w", rs.gvk, err)
	}
	f.managers[key] = m
	return m, nil
}

// resetFields are the fields a request to (sub)resource cannot own: status
// through the main resource, everything but status through /status.
func resetFields(rs *resourceStore, subresource string) map[fieldpath.APIVersion]fieldpath.Filter {
	if !rs.res.HasStatus {
		return nil
	}
	var set *fieldpath.Set
	if subresource == "status" {
		set = fieldpath.NewSet(fieldpath.MakePathOrDie("spec"))
	} else {
		set = fieldpath.NewSet(fieldpath.MakePathOrDie("status"))
	}
	return map[fieldpath.APIVersion]fieldpath.Filter{
		fieldpath.APIVersion(rs.gvk.GroupVersion().String()): fieldpath.NewExcludeSetFilter(set),
	}
}

// update records manager as the owner of what changed from old to obj.
func (f *fieldManagers) update(rs *resourceStore, subresource string, old, obj runtime.Object, manager string) (runtime.Object, error) {
	m, err := f.get(rs, subresource)
	if err != nil {
		return nil, err
	}
	return m.UpdateNoErrors(old, obj, manager), nil
}

// apply merges a server-side apply configuration sent to (sub)resource
// into live.
func (f *fieldManagers) apply(rs *resourceStore, subresource string, live runtime.Object, applied runtime.Object, manager string, force bool) (runtime.Object, error) {
	m, err := f.get(rs, subresource)
	if err != nil {
		return nil, err
	}
	if gvk := applied.GetObjectKind().GroupVersionKind(); gvk != rs.gvk {
		return nil, badRequest("the apply configuration is a %s but this endpoint takes %s", gvk, rs.gvk)
	}
	return m.Apply(live, applied, manager, force)
}

// defaulter applies the registry defaults to any object the server serves.
type defaulter struct {
	byKind map[schema.GroupVersionKind]func(runtime.Object)
}

func (d defaulter) Default(obj runtime.Object) {
	if fn := d.byKind[obj.GetObjectKind().GroupVersionKind()]; fn != nil {
		fn(obj)
	}
}
