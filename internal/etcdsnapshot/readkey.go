package etcdsnapshot

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"
)

// ErrKeyNotFound means the key has no live value in the data directory.
var ErrKeyNotFound = errors.New("key not found")

// ReadKey returns the newest value of key in a stopped (e.g. just
// restored) etcd data directory, reading its backend database directly:
// what a server needs before its etcd can start.
func ReadKey(etcdDataDir, key string) ([]byte, error) {
	path := filepath.Join(etcdDataDir, "member", "snap", "db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 10 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("open etcd database %q: %w", path, err)
	}
	defer db.Close()
	var value []byte
	err = db.View(func(tx *bolt.Tx) error {
		bucket := tx.Bucket([]byte("key"))
		if bucket == nil {
			return fmt.Errorf("%q is not an etcd database (no key bucket)", path)
		}
		// Keys are revisions in order; a tombstone's revision ends in 't'.
		return bucket.ForEach(func(rev, data []byte) error {
			var kv mvccpb.KeyValue
			if err := proto.Unmarshal(data, &kv); err != nil {
				return fmt.Errorf("etcd database %q: %w", path, err)
			}
			if string(kv.Key) != key {
				return nil
			}
			if len(rev) > 17 && rev[17] == 't' {
				value = nil
			} else {
				value = append([]byte(nil), kv.Value...)
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	if value == nil {
		return nil, fmt.Errorf("%w: %q in %s", ErrKeyNotFound, key, path)
	}
	return value, nil
}
