package etcdsnapshot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// DefaultName is the name prefix of snapshots when none is given.
const DefaultName = "etcd-snapshot"

// ext is the extension of snapshot files; checksumExt follows it on the
// checksum file beside each.
const (
	ext         = ".db"
	checksumExt = ".sha256"
)

// Snapshot is one snapshot file.
type Snapshot struct {
	// Name is the file name (<name>-<node>-<unix seconds>.db); Delete takes it.
	Name string
	// Path is the file's full path.
	Path string
	// Size is in bytes.
	Size int64
	// CreatedAt is when it was taken (from the name; else the file's mtime).
	CreatedAt time.Time
	// SHA256 is the hex digest from the .sha256 file, empty when there is none.
	SHA256 string
}

// DefaultDir is where snapshots live unless --etcd-snapshot-dir says otherwise.
func DefaultDir(dataDir string) string {
	return filepath.Join(dataDir, "server", "db", "snapshots")
}

// FileName is the snapshot file name for name, node and time.
func FileName(name, nodeName string, t time.Time) string {
	if name == "" {
		name = DefaultName
	}
	return fmt.Sprintf("%s-%s-%d%s", name, nodeName, t.Unix(), ext)
}

// Save streams a snapshot from the etcd member client talks to into
// dir/<name>-<node>-<unix>.db (through a temporary file, fsynced and
// renamed) and writes <file>.sha256 beside it. An empty name means
// DefaultName.
func Save(ctx context.Context, client *clientv3.Client, dir, name, nodeName string, now time.Time) (Snapshot, error) {
	if client == nil {
		return Snapshot{}, errors.New("save etcd snapshot: etcd is not running")
	}
	if err := checkPart("name", name, true); err != nil {
		return Snapshot{}, err
	}
	if err := checkPart("node name", nodeName, false); err != nil {
		return Snapshot{}, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Snapshot{}, fmt.Errorf("create snapshot directory %q: %w", dir, err)
	}
	fileName := FileName(name, nodeName, now)
	path := filepath.Join(dir, fileName)
	if _, err := os.Lstat(path); err == nil {
		return Snapshot{}, fmt.Errorf("save etcd snapshot: %q already exists (another snapshot with this name was taken this second)", path)
	}

	tmp, err := os.CreateTemp(dir, "."+fileName+".part-*")
	if err != nil {
		return Snapshot{}, fmt.Errorf("save etcd snapshot: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	defer tmp.Close()

	rc, err := client.Snapshot(ctx)
	if err != nil {
		return Snapshot{}, fmt.Errorf("save etcd snapshot: open the snapshot stream: %w", err)
	}
	defer rc.Close()
	h, eh := sha256.New(), &etcdHash{h: sha256.New()}
	size, err := io.Copy(io.MultiWriter(tmp, h, eh), rc)
	if err != nil && (!errors.Is(err, context.Canceled) || ctx.Err() != nil) {
		// The in-process client (v3client) ends even a whole stream with
		// context.Canceled instead of io.EOF; etcd's hash below tells a
		// whole stream from a cut one.
		return Snapshot{}, fmt.Errorf("save etcd snapshot: receive the snapshot: %w", err)
	}
	if !hasEtcdHash(size) || !eh.ok() {
		return Snapshot{}, fmt.Errorf("save etcd snapshot: the stream of %d bytes does not end with etcd's sha256 of the rest (cut short?)", size)
	}
	if err := tmp.Sync(); err != nil {
		return Snapshot{}, fmt.Errorf("save etcd snapshot: fsync %q: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return Snapshot{}, fmt.Errorf("save etcd snapshot: %w", err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	// The checksum goes first: a crash leaves at worst a stray .sha256,
	// never a snapshot without one.
	if err := writeChecksum(path, sum); err != nil {
		return Snapshot{}, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return Snapshot{}, fmt.Errorf("save etcd snapshot: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return Snapshot{}, err
	}
	return Snapshot{Name: fileName, Path: path, Size: size, CreatedAt: time.Unix(now.Unix(), 0), SHA256: sum}, nil
}

// checkPart refuses names that would make a path or an ambiguous file name.
func checkPart(what, s string, emptyOK bool) error {
	if s == "" && !emptyOK {
		return fmt.Errorf("save etcd snapshot: the %s is empty", what)
	}
	if strings.ContainsAny(s, `/\`) || strings.HasPrefix(s, ".") {
		return fmt.Errorf("save etcd snapshot: %s %q must not contain a slash or start with a dot", what, s)
	}
	return nil
}

// hasEtcdHash says whether a stream of n bytes ends with the sha256 etcd
// appends to its snapshots (its database is a whole number of 512-byte
// sectors); etcdutl's snapshot save checks the same.
func hasEtcdHash(n int64) bool { return n%512 == sha256.Size }

// etcdHash hashes everything written to it but the last sha256.Size
// bytes, which etcd's snapshot stream ends with: the sha256 of the rest.
type etcdHash struct {
	h    hash.Hash
	tail []byte
}

func (w *etcdHash) Write(p []byte) (int, error) {
	buf := append(w.tail, p...)
	if cut := len(buf) - sha256.Size; cut > 0 {
		w.h.Write(buf[:cut])
		buf = buf[cut:]
	}
	w.tail = append([]byte(nil), buf...)
	return len(p), nil
}

func (w *etcdHash) ok() bool {
	return len(w.tail) == sha256.Size && bytes.Equal(w.h.Sum(nil), w.tail)
}

// createdAt reads the unix seconds at the end of a snapshot file name.
func createdAt(name string) (time.Time, bool) {
	base := strings.TrimSuffix(name, ext)
	i := strings.LastIndexByte(base, '-')
	if i < 0 {
		return time.Time{}, false
	}
	sec, err := strconv.ParseInt(base[i+1:], 10, 64)
	if err != nil || sec < 0 {
		return time.Time{}, false
	}
	return time.Unix(sec, 0), true
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsync %q: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync %q: %w", dir, err)
	}
	return nil
}
