package storage

import (
	"context"
	"fmt"

	"k8s.io/apiserver/pkg/storage/value"
)

// Transformer turns values into what is stored and back: encryption at
// rest (k8s.io/apiserver's providers: aescbc, aesgcm, secretbox, identity).
// The etcd key is the authenticated data, so a value cannot be moved to
// another key. stale says the value was written with a key that is no
// longer the first (re-encrypting it would change it).
type Transformer = value.Transformer

// Transformed is inner with every value passed through t: written with
// TransformToStorage, read with TransformFromStorage. A value that cannot
// be read (a key that is gone, altered data) is an error naming its key;
// it is never returned as if it were plain.
func Transformed(inner Interface, t Transformer) Interface {
	return &transformed{Interface: inner, t: t}
}

type transformed struct {
	Interface
	t Transformer
}

// Stale says whether the stored value of key would be written differently
// now (its encryption key is no longer the first one), so that an update
// that changes nothing still rewrites it. A store that transforms nothing
// is never stale.
func Stale(ctx context.Context, s Interface, key string) (bool, error) {
	t, ok := s.(*transformed)
	if !ok {
		return false, nil
	}
	kv, err := t.Interface.Get(ctx, key)
	if err != nil {
		return false, err
	}
	_, stale, err := t.t.TransformFromStorage(ctx, kv.Value, value.DefaultContext(key))
	return stale, err
}

func (s *transformed) from(ctx context.Context, kv *KeyValue) error {
	if kv == nil || len(kv.Value) == 0 {
		return nil
	}
	plain, _, err := s.t.TransformFromStorage(ctx, kv.Value, value.DefaultContext(kv.Key))
	if err != nil {
		return fmt.Errorf("cannot decrypt the value of %s: %w", kv.Key, err)
	}
	kv.Value = plain
	return nil
}

func (s *transformed) to(ctx context.Context, key string, plain []byte) ([]byte, error) {
	out, err := s.t.TransformToStorage(ctx, plain, value.DefaultContext(key))
	if err != nil {
		return nil, fmt.Errorf("cannot encrypt the value of %s: %w", key, err)
	}
	return out, nil
}

func (s *transformed) Get(ctx context.Context, key string) (KeyValue, error) {
	kv, err := s.Interface.Get(ctx, key)
	if err != nil {
		return kv, err
	}
	return kv, s.from(ctx, &kv)
}

func (s *transformed) Create(ctx context.Context, key string, plain []byte) (int64, error) {
	data, err := s.to(ctx, key, plain)
	if err != nil {
		return 0, err
	}
	return s.Interface.Create(ctx, key, data)
}

func (s *transformed) Update(ctx context.Context, key string, plain []byte, expectedRevision int64) (int64, error) {
	data, err := s.to(ctx, key, plain)
	if err != nil {
		return 0, err
	}
	return s.Interface.Update(ctx, key, data, expectedRevision)
}

func (s *transformed) Delete(ctx context.Context, key string, expectedRevision int64) (KeyValue, error) {
	kv, err := s.Interface.Delete(ctx, key, expectedRevision)
	if err != nil {
		return kv, err
	}
	return kv, s.from(ctx, &kv)
}

func (s *transformed) List(ctx context.Context, prefix string, opts ListOptions) (ListResult, error) {
	res, err := s.Interface.List(ctx, prefix, opts)
	if err != nil {
		return res, err
	}
	for i := range res.KVs {
		if err := s.from(ctx, &res.KVs[i]); err != nil {
			return ListResult{}, err
		}
	}
	return res, nil
}

func (s *transformed) Watch(ctx context.Context, prefix string, fromRevision int64) <-chan Event {
	ctx, cancel := context.WithCancel(ctx)
	in := s.Interface.Watch(ctx, prefix, fromRevision)
	out := make(chan Event, cap(in))
	go func() {
		defer close(out)
		defer cancel()
		for ev := range in {
			if err := s.from(ctx, &ev.KV); err != nil {
				send(ctx, out, Event{Type: Error, Err: err})
				return
			}
			if err := s.from(ctx, ev.Prev); err != nil {
				send(ctx, out, Event{Type: Error, Err: err})
				return
			}
			if !send(ctx, out, ev) {
				return
			}
		}
	}()
	return out
}
