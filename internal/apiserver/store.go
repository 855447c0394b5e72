package apiserver

import (
	"bytes"
	"context"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"orch/internal/apiserver/registry"
	"orch/internal/storage"
)

// maxObjectBytes is the largest encoded object the server stores (etcd's
// request limit is a little above it).
const maxObjectBytes = 1536 * 1024

// resourceStore keeps one resource's objects in storage under
// /registry/RESOURCE/[NAMESPACE/]NAME, encoded as protobuf (another
// version of a stored resource, res.StoredAs, converted to and from it).
type resourceStore struct {
	res    registry.Resource
	gvk    schema.GroupVersionKind
	gr     schema.GroupResource
	prefix string
	store  storage.Interface
	cache  *storage.Cache
	codecs *codecs
	// custom is set for the stores of custom resources: JSON, unstructured
	// objects, versions converted.
	custom *customCodec
}

func (s *resourceStore) key(namespace, name string) string {
	if s.res.Namespaced {
		return s.prefix + namespace + "/" + name
	}
	return s.prefix + name
}

// listPrefix is the key prefix of a list in namespace ("" for all).
func (s *resourceStore) listPrefix(namespace string) string {
	if s.res.Namespaced && namespace != "" {
		return s.prefix + namespace + "/"
	}
	return s.prefix
}

// decode turns a stored value into a typed object whose resourceVersion is
// the revision and whose apiVersion/kind are set.
func (s *resourceStore) decode(kv storage.KeyValue) (runtime.Object, error) {
	var obj runtime.Object
	var err error
	switch {
	case s.custom != nil:
		obj, err = s.custom.decode(s, kv.Value)
	case s.res.StoredAs != nil:
		if obj, _, err = s.codecs.storage.Decode(kv.Value, nil, s.res.StoredAs.New()); err == nil {
			obj, err = s.res.StoredAs.FromStored(obj)
		}
	default:
		obj, _, err = s.codecs.storage.Decode(kv.Value, nil, s.res.New())
	}
	if err != nil {
		return nil, fmt.Errorf("decode %q: %w", kv.Key, err)
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	accessor.SetResourceVersion(strconv.FormatInt(kv.Revision, 10))
	obj.GetObjectKind().SetGroupVersionKind(s.gvk)
	return obj, nil
}

func (s *resourceStore) decodeAny(kv storage.KeyValue) (any, error) { return s.decode(kv) }

// encode serializes obj for storage without its resourceVersion.
func (s *resourceStore) encode(obj runtime.Object) ([]byte, error) {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	rv := accessor.GetResourceVersion()
	accessor.SetResourceVersion("")
	defer accessor.SetResourceVersion(rv)
	var buf bytes.Buffer
	if s.custom != nil {
		data, err := s.custom.encode(obj)
		if err != nil {
			return nil, err
		}
		buf.Write(data)
	} else {
		if sv := s.res.StoredAs; sv != nil {
			stored, err := sv.ToStored(obj)
			if err != nil {
				return nil, fmt.Errorf("convert %s to %s: %w", s.gvk.Kind, sv.GroupVersion.WithKind(sv.Kind), err)
			}
			stored.GetObjectKind().SetGroupVersionKind(sv.GroupVersion.WithKind(sv.Kind))
			obj = stored
		}
		if err := s.codecs.storage.Encode(obj, &buf); err != nil {
			return nil, fmt.Errorf("encode %s: %w", s.gvk.Kind, err)
		}
	}
	if buf.Len() > maxObjectBytes {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
			"the object is %d bytes when stored, more than the limit of %d bytes; store large data elsewhere", buf.Len(), maxObjectBytes))
	}
	return buf.Bytes(), nil
}

func (s *resourceStore) get(ctx context.Context, namespace, name string) (runtime.Object, error) {
	kv, err := s.store.Get(ctx, s.key(namespace, name))
	if err != nil {
		return nil, err
	}
	return s.decode(kv)
}

func (s *resourceStore) create(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
	accessor, _ := meta.Accessor(obj)
	data, err := s.encode(obj)
	if err != nil {
		return nil, err
	}
	rev, err := s.store.Create(ctx, s.key(accessor.GetNamespace(), accessor.GetName()), data)
	if err != nil {
		return nil, err
	}
	accessor.SetResourceVersion(strconv.FormatInt(rev, 10))
	return obj, nil
}

// update writes obj if the stored revision is still expectedRevision.
func (s *resourceStore) update(ctx context.Context, obj runtime.Object, expectedRevision int64) (runtime.Object, error) {
	accessor, _ := meta.Accessor(obj)
	data, err := s.encode(obj)
	if err != nil {
		return nil, err
	}
	rev, err := s.store.Update(ctx, s.key(accessor.GetNamespace(), accessor.GetName()), data, expectedRevision)
	if err != nil {
		return nil, err
	}
	accessor.SetResourceVersion(strconv.FormatInt(rev, 10))
	return obj, nil
}

// remove deletes the object if its revision is still expectedRevision and
// returns it as it was, with the revision of the deletion.
func (s *resourceStore) remove(ctx context.Context, namespace, name string, expectedRevision int64) (runtime.Object, error) {
	kv, err := s.store.Delete(ctx, s.key(namespace, name), expectedRevision)
	if err != nil {
		return nil, err
	}
	return s.decode(kv)
}

// revisionOf parses an object's resourceVersion.
func revisionOf(obj runtime.Object) int64 {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return 0
	}
	rev, _ := strconv.ParseInt(accessor.GetResourceVersion(), 10, 64)
	return rev
}
