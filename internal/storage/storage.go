// Package storage is the small key-value interface the apiserver stores objects
// through: revisioned get/create/update/delete, paginated list and watch, with an
// implementation over embedded etcd (Etcd), a watch cache that lets many watchers
// share one etcd watch (Cache), and a conformance suite every implementation
// passes (storagetest).
//
// Values are opaque bytes here; the apiserver encodes and decodes objects.
// Revisions are etcd revisions and become resourceVersions at the API.
package storage

import (
	"context"
	"errors"
)

// Sentinel errors; callers test them with errors.Is and the apiserver maps them
// to metav1.Status once, at its edge.
var (
	// ErrNotFound means the key does not exist.
	ErrNotFound = errors.New("not found")
	// ErrExists means a create found the key already present.
	ErrExists = errors.New("already exists")
	// ErrConflict means the key changed since the revision the caller expected.
	ErrConflict = errors.New("the object has been modified")
	// ErrCompacted means the requested revision is older than what is kept.
	ErrCompacted = errors.New("resource version too old")
	// ErrFuture means the requested revision is newer than the store has.
	ErrFuture = errors.New("resource version is in the future")
)

// KeyValue is one stored value and the revision that last modified it.
type KeyValue struct {
	Key      string
	Value    []byte
	Revision int64
}

// ListOptions selects a page of keys under a prefix.
type ListOptions struct {
	// Revision reads at that revision; 0 reads the latest.
	Revision int64
	// Limit caps the number of keys returned; 0 means no limit.
	Limit int64
	// StartKey resumes a paginated list at this key (inclusive).
	StartKey string
}

// ListResult is one page of a list.
type ListResult struct {
	KVs []KeyValue
	// Revision is the revision the list was read at.
	Revision int64
	// More is true when keys remain after the last one returned.
	More bool
	// Remaining counts the keys after this page (when More).
	Remaining int64
}

// EventType is the kind of change a watch event reports.
type EventType string

// Event types, named as the watch API names them.
const (
	Added    EventType = "ADDED"
	Modified EventType = "MODIFIED"
	Deleted  EventType = "DELETED"
	// Error carries Err; the watch ends after it.
	Error EventType = "ERROR"
	// Progress says the watch has seen everything up to KV.Revision.
	Progress EventType = "PROGRESS"
)

// Event is one change to one key. For Deleted, KV.Value is the last value and
// KV.Revision the revision of the deletion. Prev is the value before a
// modification or deletion (nil for Added).
type Event struct {
	Type EventType
	KV   KeyValue
	Prev *KeyValue
	Err  error
}

// Interface is what the apiserver needs from a store.
type Interface interface {
	// Get returns the current value of key or ErrNotFound.
	Get(ctx context.Context, key string) (KeyValue, error)
	// Create stores value under a new key; ErrExists if it is present.
	Create(ctx context.Context, key string, value []byte) (int64, error)
	// Update replaces the value if its revision is still expectedRevision
	// (ErrConflict otherwise, ErrNotFound if gone).
	Update(ctx context.Context, key string, value []byte, expectedRevision int64) (int64, error)
	// Delete removes the key if its revision is still expectedRevision (0: any)
	// and returns the deleted value with the revision of the deletion.
	Delete(ctx context.Context, key string, expectedRevision int64) (KeyValue, error)
	// List returns keys under prefix in key order.
	List(ctx context.Context, prefix string, opts ListOptions) (ListResult, error)
	// Watch streams the changes under prefix after revision fromRevision until
	// ctx ends; an Error event (ErrCompacted) ends it early.
	Watch(ctx context.Context, prefix string, fromRevision int64) <-chan Event
	// CurrentRevision returns the store's latest revision.
	CurrentRevision(ctx context.Context) (int64, error)
	// RequestProgress asks every open watch for a Progress event, so
	// watchers of quiet prefixes learn the store's current revision.
	RequestProgress(ctx context.Context) error
}
