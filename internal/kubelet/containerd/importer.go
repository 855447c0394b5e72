package containerd

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"orch/internal/fsutil"

	"github.com/klauspost/compress/zstd"
)

// ImageStore is where the importer puts images: containerd, through its Go
// client (NewStore), or a fake in unit tests.
type ImageStore interface {
	// Import reads one docker-archive or OCI tarball, stores its images
	// pinned and unpacked, and returns their names.
	Import(ctx context.Context, archive io.Reader) ([]string, error)
	// Present reports whether every named image exists and is unpacked.
	Present(ctx context.Context, names []string) (bool, error)
}

// Builtin is an image carried inside the binary, e.g. the pause image.
type Builtin struct {
	Name  string
	Write func(io.Writer) error
}

// Importer imports the built-in images and every *.tar, *.tar.gz and
// *.tar.zst file of Dir, at start and again when a file is added or changed.
//
// It polls Dir (every Interval) rather than using inotify: a poll costs one
// directory read and a stat per file, works on any filesystem, and sees a
// file only once it stopped changing (Settle), so a half-copied archive is
// not imported. It remembers each file's size, modification time and SHA-256
// in StatePath, so an unchanged file is not read again and a touched but
// identical one is not imported again; a file whose images vanished from
// containerd is imported again.
type Importer struct {
	Dir       string
	StatePath string
	Builtins  []Builtin
	Interval  time.Duration // between polls of Dir (5 s when zero)
	Settle    time.Duration // a file changed more recently than this waits for the next poll
	store     ImageStore
	log       *slog.Logger

	mu     sync.Mutex
	state  map[string]*importRecord
	loaded bool
	ready  chan struct{}
}

// importRecord is what the state file remembers about one source.
type importRecord struct {
	Size    int64     `json:"size"`
	ModTime time.Time `json:"modTime"`
	SHA256  string    `json:"sha256"`
	Images  []string  `json:"images,omitempty"`
	Error   string    `json:"error,omitempty"`
}

// builtinPrefix marks the state of a built-in image.
const builtinPrefix = "builtin:"

// NewImporter returns an importer of dir into store; log may be nil.
func NewImporter(store ImageStore, dir, statePath string, builtins []Builtin, log *slog.Logger) *Importer {
	if log == nil {
		log = slog.Default()
	}
	return &Importer{
		Dir: dir, StatePath: statePath, Builtins: builtins, Interval: 5 * time.Second, Settle: 2 * time.Second,
		store: store, log: log.With("component", "images"), ready: make(chan struct{}),
	}
}

// Ready is closed once the built-in images are imported: pods can start.
func (im *Importer) Ready() <-chan struct{} { return im.ready }

// Start imports at once, then every Interval, until ctx ends. Until the
// built-in images are in, it retries every second (containerd may still be
// starting). Only a built-in image that cannot be built fails Start; a bad
// archive logs an error and is tried again when it changes.
func (im *Importer) Start(ctx context.Context) error {
	interval := im.Interval
	if interval == 0 {
		interval = 5 * time.Second
	}
	ready := false
	for {
		_, err := im.Sync(ctx)
		var buildErr *buildError
		if errors.As(err, &buildErr) {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			im.log.Error("importing images", "dir", im.Dir, "err", err)
		}
		wait := interval
		if !ready && im.builtinsImported() {
			close(im.ready)
			ready = true
		} else if !ready {
			wait = time.Second
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// buildError is a built-in image that could not be built: no retry helps.
type buildError struct{ err error }

func (e *buildError) Error() string { return e.err.Error() }
func (e *buildError) Unwrap() error { return e.err }

func (im *Importer) builtinsImported() bool {
	im.mu.Lock()
	defer im.mu.Unlock()
	for _, b := range im.Builtins {
		if r := im.state[builtinPrefix+b.Name]; r == nil || r.Error != "" {
			return false
		}
	}
	return true
}

// Images returns the names of the images imported so far, sorted: the
// images the kubelet's image garbage collection must keep.
func (im *Importer) Images() []string {
	im.mu.Lock()
	defer im.mu.Unlock()
	var names []string
	for _, r := range im.state {
		names = append(names, r.Images...)
	}
	sort.Strings(names)
	return names
}

// Sync imports what is new or changed once and returns the sources it
// imported (file paths, or "builtin:" and the image name).
func (im *Importer) Sync(ctx context.Context) ([]string, error) {
	im.mu.Lock()
	defer im.mu.Unlock()
	if !im.loaded {
		im.state = loadState(im.StatePath, im.log)
		im.loaded = true
	}
	var imported []string
	var errs []error
	changed := false
	for _, b := range im.Builtins {
		var buf bytes.Buffer
		if err := b.Write(&buf); err != nil {
			return imported, &buildError{fmt.Errorf("build the built-in image %q: %w", b.Name, err)}
		}
		key := builtinPrefix + b.Name
		sum := sha256.Sum256(buf.Bytes())
		rec := &importRecord{Size: int64(buf.Len()), SHA256: hex.EncodeToString(sum[:])}
		did, err := im.importIfNeeded(ctx, key, rec, func() (io.ReadCloser, error) { return io.NopCloser(&buf), nil })
		if err != nil {
			errs = append(errs, fmt.Errorf("import the built-in image %q: %w", b.Name, err))
			delete(im.state, key) // a built-in image is retried at every round
			continue
		}
		if did {
			imported, changed = append(imported, key), true
		}
	}
	files, err := archives(im.Dir)
	if err != nil {
		errs = append(errs, err)
	}
	seen := map[string]bool{}
	for _, path := range files {
		seen[path] = true
		fi, err := os.Stat(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if age := time.Since(fi.ModTime()); age >= 0 && age < im.Settle {
			continue // still being written, perhaps: next poll (a future mtime does not wait)
		}
		rec := &importRecord{Size: fi.Size(), ModTime: fi.ModTime().UTC()}
		if old := im.state[path]; old != nil && old.Size == rec.Size && old.ModTime.Equal(rec.ModTime) {
			if old.Error != "" {
				continue // failed before and unchanged since: wait for a change
			}
			rec.SHA256 = old.SHA256
		} else {
			if rec.SHA256, err = hashFile(path); err != nil {
				errs = append(errs, err)
				continue
			}
			changed = true // at least the size or time is new
		}
		did, err := im.importIfNeeded(ctx, path, rec, func() (io.ReadCloser, error) { return openArchive(path) })
		changed = changed || did || err != nil
		if err != nil {
			errs = append(errs, fmt.Errorf("import %s: %w", path, err))
			continue
		}
		if did {
			imported = append(imported, path)
		}
	}
	for key := range im.state {
		if !strings.HasPrefix(key, builtinPrefix) && !seen[key] {
			delete(im.state, key) // its images stay: removing a file does not remove images
			changed = true
		}
	}
	if changed {
		if err := saveState(im.StatePath, im.state); err != nil {
			errs = append(errs, err)
		}
	}
	return imported, errors.Join(errs...)
}

// importIfNeeded imports source unless the state says the same content was
// imported and its images are still there. It records the outcome in
// im.state (also a failure, so an unchanged bad file is not retried).
func (im *Importer) importIfNeeded(ctx context.Context, key string, rec *importRecord, open func() (io.ReadCloser, error)) (bool, error) {
	if old := im.state[key]; old != nil && old.Error == "" && old.SHA256 == rec.SHA256 {
		present, err := im.store.Present(ctx, old.Images)
		if err != nil {
			return false, err
		}
		if present {
			if !old.ModTime.Equal(rec.ModTime) || old.Size != rec.Size {
				old.ModTime, old.Size = rec.ModTime, rec.Size // touched, same content
			}
			return false, nil
		}
	}
	r, err := open()
	if err != nil {
		return false, err
	}
	defer r.Close()
	start := time.Now()
	names, err := im.store.Import(ctx, r)
	if err != nil {
		if ctx.Err() != nil {
			return false, err // interrupted, not a bad file
		}
		rec.Error = err.Error()
		im.state[key] = rec
		return false, err
	}
	sort.Strings(names)
	rec.Images = names
	im.state[key] = rec
	im.log.Info("imported images", "source", key, "images", names, "took", time.Since(start).Round(time.Millisecond))
	return true, nil
}

// archives lists the files of dir that are image archives, sorted. A
// missing dir has none.
func archives(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() && e.Type()&os.ModeSymlink == 0 {
			continue
		}
		if strings.HasSuffix(name, ".tar") || strings.HasSuffix(name, ".tar.gz") || strings.HasSuffix(name, ".tar.zst") {
			files = append(files, filepath.Join(dir, name))
		}
	}
	return files, nil
}

// openArchive opens an image archive, decompressed by its file name.
func openArchive(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	switch {
	case strings.HasSuffix(path, ".tar.gz"):
		z, err := gzip.NewReader(f)
		if err != nil {
			f.Close()
			return nil, err
		}
		return readCloser{z, func() { z.Close(); f.Close() }}, nil
	case strings.HasSuffix(path, ".tar.zst"):
		z, err := zstd.NewReader(f)
		if err != nil {
			f.Close()
			return nil, err
		}
		return readCloser{z, func() { z.Close(); f.Close() }}, nil
	}
	return f, nil
}

type readCloser struct {
	io.Reader
	close func()
}

func (r readCloser) Close() error { r.close(); return nil }

func hashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func loadState(path string, log *slog.Logger) map[string]*importRecord {
	state := map[string]*importRecord{}
	data, err := os.ReadFile(path)
	if err != nil {
		return state
	}
	if err := json.Unmarshal(data, &state); err != nil {
		log.Warn("ignoring unreadable image import state; importing everything again", "path", path, "err", err)
		return map[string]*importRecord{}
	}
	return state
}

func saveState(path string, state map[string]*importRecord) error {
	data, err := json.MarshalIndent(state, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(path, data, 0o600)
}
