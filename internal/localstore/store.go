package localstore

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"orch/internal/fsutil"
)

// Files under the directory Open is given.
const (
	DBFile  = "store.db"
	KeyFile = "store.key" // 32 random bytes, mode 0600: the AES-256-GCM key of sealed values
)

// Buckets of the database.
var (
	collectionsBucket = []byte("collections") // a bucket per collection: metaKey and itemsBucket
	objectsBucket     = []byte("objects")     // object path → value
	tokensBucket      = []byte("tokens")      // token key → value of a tokenRecord
	itemsBucket       = []byte("items")       // namespace/name → value
	metaKey           = []byte("meta")        // a collectionMeta
)

// Value formats: the first byte says how the rest is kept.
const (
	plainValue  byte = 0
	sealedValue byte = 1 // nonce, then AES-GCM ciphertext
)

// collectionMeta is what a collection's list answer needs besides its
// items (which are never sealed: no collection of Secrets is recorded).
type collectionMeta struct {
	Kind            string `json:"kind"`
	APIVersion      string `json:"apiVersion"`
	ResourceVersion string `json:"resourceVersion"`
}

// tokenRecord is a TokenRequest answer and when its token expires.
type tokenRecord struct {
	Body    []byte    `json:"body"`
	Expires time.Time `json:"expires"`
}

// Store is the agent's bbolt file of what its node needs to run without
// the API. Reads are transactions of their own; writes are queued and
// committed in batches by one goroutine, so a watch event costs its reader
// no fsync. Close commits what is queued.
type Store struct {
	db   *bolt.DB
	aead cipher.AEAD
	log  *slog.Logger
	now  func() time.Time

	ops     chan writeOp
	stopped chan struct{}
	closing sync.Once

	mu sync.Mutex
	// rvs are the collections' resource versions as the queued writes
	// leave them (what a watch must start from to continue one).
	rvs map[string]string
	// recording are the collections a watch is recording into.
	recording map[string]bool
	// held is closed when the server answers again (see reachable).
	held chan struct{}
	// changed is set by writes to collections of pods (what decides
	// which objects are used) and cleared by a garbage collection.
	changed bool

	// offlineUntil is when the store stops answering reads without
	// asking the server (unix nanoseconds).
	offlineUntil atomic.Int64
}

// Options change Open's defaults.
type Options struct {
	Log *slog.Logger
	// Now is the clock tokens' expiry is judged by (time.Now when nil).
	Now func() time.Time
	// GCInterval is how often, at most, objects no stored pod uses are
	// dropped (30 seconds when zero).
	GCInterval time.Duration
}

// Open opens (or creates) the store in dir: DBFile, sealed with KeyFile.
// It waits at most 10 seconds for another process to release the file.
func Open(dir string, opts Options) (*Store, error) {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.GCInterval <= 0 {
		opts.GCInterval = 30 * time.Second
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("local store: %w", err)
	}
	aead, err := loadKey(filepath.Join(dir, KeyFile))
	if err != nil {
		return nil, err
	}
	db, err := bolt.Open(filepath.Join(dir, DBFile), 0o600, &bolt.Options{Timeout: 10 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("local store %s: %w", filepath.Join(dir, DBFile), err)
	}
	s := &Store{db: db, aead: aead, log: opts.Log, now: opts.Now, ops: make(chan writeOp, 1024),
		stopped: make(chan struct{}), rvs: map[string]string{}, recording: map[string]bool{}}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{collectionsBucket, objectsBucket, tokensBucket} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return tx.Bucket(collectionsBucket).ForEachBucket(func(k []byte) error {
			var m collectionMeta
			if err := json.Unmarshal(tx.Bucket(collectionsBucket).Bucket(k).Get(metaKey), &m); err == nil {
				s.rvs[string(k)] = m.ResourceVersion
			}
			return nil
		})
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("local store: %w", err)
	}
	go s.write(opts.GCInterval)
	return s, nil
}

// Close commits the queued writes and closes the file.
func (s *Store) Close() error {
	s.closing.Do(func() { close(s.ops) })
	<-s.stopped
	return s.db.Close()
}

// loadKey reads the sealing key, creating it on first use.
func loadKey(path string) (cipher.AEAD, error) {
	key, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		if err := fsutil.WriteFileAtomic(path, key, 0o600); err != nil {
			return nil, fmt.Errorf("local store key: %w", err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("local store key: %w", err)
	}
	if len(key) != 32 {
		return nil, fmt.Errorf("local store key %s: %d bytes, not 32 (remove it and %s to start afresh)", path, len(key), DBFile)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// writeOp is a queued write, or (apply nil) a wait for the writes
// queued before it: done is closed once they are committed.
type writeOp struct {
	apply func(*bolt.Tx) error
	done  chan struct{}
}

// write commits queued writes, as many as are waiting in one
// transaction, and drops unused objects after pods changed.
func (s *Store) write(gcInterval time.Duration) {
	defer close(s.stopped)
	gc := time.NewTicker(gcInterval)
	defer gc.Stop()
	for {
		var batch []writeOp
		select {
		case op, ok := <-s.ops:
			if !ok {
				return
			}
			batch = append(batch, op)
		drain:
			for len(batch) < 512 {
				select {
				case op, ok := <-s.ops:
					if !ok {
						break drain
					}
					batch = append(batch, op)
				default:
					break drain
				}
			}
		case <-gc.C:
			s.mu.Lock()
			changed := s.changed
			s.changed = false
			s.mu.Unlock()
			if !changed {
				continue
			}
			batch = append(batch, writeOp{apply: s.collect})
		}
		err := s.db.Update(func(tx *bolt.Tx) error {
			for _, op := range batch {
				if op.apply == nil {
					continue
				}
				if err := op.apply(tx); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			s.log.Error("local store: cannot write", "err", err)
		}
		for _, op := range batch {
			if op.done != nil {
				close(op.done)
			}
		}
	}
}

// enqueue queues a write; after Close it is dropped.
func (s *Store) enqueue(apply func(*bolt.Tx) error) {
	s.send(writeOp{apply: apply})
}

func (s *Store) send(op writeOp) (sent bool) {
	defer func() { _ = recover() }() // sent after Close: the agent is stopping
	s.ops <- op
	return true
}

// flush waits until the writes queued so far are committed.
func (s *Store) flush() {
	done := make(chan struct{})
	if s.send(writeOp{done: done}) {
		<-done
	}
}

// seal and open encode values.
func (s *Store) seal(v []byte, sealed bool) []byte {
	if !sealed {
		return append([]byte{plainValue}, v...)
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return append(append([]byte{sealedValue}, nonce...), s.aead.Seal(nil, nonce, v, nil)...)
}

func (s *Store) open(v []byte) ([]byte, error) {
	if len(v) == 0 {
		return nil, errors.New("empty value")
	}
	switch v[0] {
	case plainValue:
		return bytes.Clone(v[1:]), nil
	case sealedValue:
		n := s.aead.NonceSize()
		if len(v) < 1+n {
			return nil, errors.New("short sealed value")
		}
		return s.aead.Open(nil, v[1:1+n], v[1+n:], nil)
	}
	return nil, fmt.Errorf("unknown value format %d", v[0])
}

// replace makes a collection's items exactly items (namespace/name → object).
func (s *Store) replace(key string, m collectionMeta, items map[string][]byte) {
	s.mu.Lock()
	s.rvs[key] = m.ResourceVersion
	s.changed = s.changed || podsCollection(key)
	s.mu.Unlock()
	s.enqueue(func(tx *bolt.Tx) error {
		all := tx.Bucket(collectionsBucket)
		if all.Bucket([]byte(key)) != nil {
			if err := all.DeleteBucket([]byte(key)); err != nil {
				return err
			}
		}
		b, err := all.CreateBucket([]byte(key))
		if err != nil {
			return err
		}
		meta, _ := json.Marshal(m)
		if err := b.Put(metaKey, meta); err != nil {
			return err
		}
		ib, err := b.CreateBucket(itemsBucket)
		if err != nil {
			return err
		}
		for name, obj := range items {
			if err := ib.Put([]byte(name), s.seal(obj, false)); err != nil {
				return err
			}
		}
		return nil
	})
}

// forget drops a collection: what the store has is no longer its members.
func (s *Store) forget(key string) {
	s.mu.Lock()
	delete(s.rvs, key)
	s.mu.Unlock()
	s.enqueue(func(tx *bolt.Tx) error {
		if tx.Bucket(collectionsBucket).Bucket([]byte(key)) == nil {
			return nil
		}
		return tx.Bucket(collectionsBucket).DeleteBucket([]byte(key))
	})
}

// event is one change to a collection from a watch.
type event struct {
	deleted bool
	name    string // namespace/name; "" for a bookmark
	rv      string
	object  []byte
}

// apply records a watch's event in a collection the store has; an object
// older than the one stored is not put back.
func (s *Store) apply(key string, ev event) {
	s.mu.Lock()
	if _, ok := s.rvs[key]; !ok {
		s.mu.Unlock()
		return
	}
	if !newer(s.rvs[key], ev.rv) {
		s.rvs[key] = ev.rv
	}
	s.changed = s.changed || podsCollection(key)
	s.mu.Unlock()
	s.enqueue(func(tx *bolt.Tx) error {
		b := tx.Bucket(collectionsBucket).Bucket([]byte(key))
		if b == nil {
			return nil
		}
		var m collectionMeta
		if err := json.Unmarshal(b.Get(metaKey), &m); err != nil {
			return nil // not a collection this version wrote: leave it to a list
		}
		if !newer(m.ResourceVersion, ev.rv) {
			m.ResourceVersion = ev.rv
			meta, _ := json.Marshal(m)
			if err := b.Put(metaKey, meta); err != nil {
				return err
			}
		}
		items := b.Bucket(itemsBucket)
		switch {
		case ev.name == "":
			return nil
		case ev.deleted:
			return items.Delete([]byte(ev.name))
		}
		if old := items.Get([]byte(ev.name)); old != nil {
			if prev, err := s.open(old); err == nil && newer(objectRV(prev), ev.rv) {
				return nil
			}
		}
		return items.Put([]byte(ev.name), s.seal(ev.object, false))
	})
}

// newer is true when resource version a is after b; versions that are not
// numbers (another apiserver's) are never newer.
func newer(a, b string) bool {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	return err1 == nil && err2 == nil && x > y
}

// startRecording lets a watch that starts at rv record into the
// collection key: only when the store has the collection at exactly rv
// (the watch continues what is stored) and no other watch records into
// it. done ends the recording.
func (s *Store) startRecording(key, rv string) (done func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if stored, ok := s.rvs[key]; !ok || stored != rv || s.recording[key] {
		return nil, false
	}
	s.recording[key] = true
	return func() {
		s.mu.Lock()
		delete(s.recording, key)
		s.mu.Unlock()
	}, true
}

// collection returns a stored collection; ok is false when there is none.
func (s *Store) collection(key string) (m collectionMeta, items [][]byte, ok bool, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(collectionsBucket).Bucket([]byte(key))
		if b == nil {
			return nil
		}
		if err := json.Unmarshal(b.Get(metaKey), &m); err != nil {
			return fmt.Errorf("collection %q: %w", key, err)
		}
		ok = true
		return b.Bucket(itemsBucket).ForEach(func(_, v []byte) error {
			obj, err := s.open(v)
			if err != nil {
				return fmt.Errorf("collection %q: %w", key, err)
			}
			items = append(items, obj)
			return nil
		})
	})
	return m, items, ok && err == nil, err
}

// putObject records a GET's answer; deleteObject forgets it (the API said
// it does not exist).
func (s *Store) putObject(key string, obj []byte, sealed bool) {
	s.enqueue(func(tx *bolt.Tx) error { return tx.Bucket(objectsBucket).Put([]byte(key), s.seal(obj, sealed)) })
}

func (s *Store) deleteObject(key string) {
	s.enqueue(func(tx *bolt.Tx) error { return tx.Bucket(objectsBucket).Delete([]byte(key)) })
}

// object returns a recorded GET answer.
func (s *Store) object(key string) (obj []byte, ok bool, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(objectsBucket).Get([]byte(key))
		if v == nil {
			return nil
		}
		obj, err = s.open(v)
		ok = err == nil
		return err
	})
	return obj, ok, err
}

// putToken records a TokenRequest's answer until it expires.
func (s *Store) putToken(key string, body []byte, expires time.Time) {
	rec, _ := json.Marshal(tokenRecord{Body: body, Expires: expires})
	s.enqueue(func(tx *bolt.Tx) error { return tx.Bucket(tokensBucket).Put([]byte(key), s.seal(rec, true)) })
}

// token returns a recorded TokenRequest answer that has not expired.
func (s *Store) token(key string) (body []byte, ok bool, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(tokensBucket).Get([]byte(key))
		if v == nil {
			return nil
		}
		raw, err := s.open(v)
		if err != nil {
			return err
		}
		var rec tokenRecord
		if err := json.Unmarshal(raw, &rec); err != nil {
			return err
		}
		body, ok = rec.Body, s.now().Before(rec.Expires)
		return nil
	})
	return body, ok, err
}
