package staticpods

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// PollInterval is how often Source looks at its directory.
const PollInterval = 2 * time.Second

// Source serves the static pods of the manifests in one directory. Make it
// with NewSource, set OnChange, then run Start.
type Source struct {
	dir, node string
	log       *slog.Logger
	interval  time.Duration
	now       func() time.Time
	onChange  func(key string)
	synced    chan struct{}

	// Owned by the Start goroutine.
	files map[string]*manifest // by path
	noted map[string]string    // path → why it is not read, once logged

	mu   sync.RWMutex
	pods map[string]*served // by namespace/name
}

// manifest is what the last read of one file gave.
type manifest struct {
	id          fileID
	pod         *corev1.Pod // nil when the file is not a valid manifest
	fingerprint string
	err         string // why pod is nil, once logged
	shadowedBy  string // path of an earlier file with the same pod, once logged
}

// served is a pod Get returns, with the file it came from.
type served struct {
	pod         *corev1.Pod
	path        string
	fingerprint string
}

// fileID identifies one version of a file (see identify).
type fileID struct {
	size, mtime, ctime int64
	ino                uint64
}

// NewSource returns the static pods of node from the manifests in dir.
func NewSource(dir, nodeName string, log *slog.Logger) *Source {
	return &Source{
		dir: dir, node: nodeName, log: log.With("component", "staticpods", "dir", dir),
		interval: PollInterval, now: time.Now, synced: make(chan struct{}),
		files: map[string]*manifest{}, noted: map[string]string{}, pods: map[string]*served{},
	}
}

// OnChange sets the function called, from the Start goroutine, with the
// key (namespace/name) of each pod added, changed or removed. Set it
// before Start.
func (s *Source) OnChange(f func(key string)) { s.onChange = f }

// Synced is closed once the directory has been read in full the first
// time (and OnChange called for each pod found).
func (s *Source) Synced() <-chan struct{} { return s.synced }

// Start reads the directory, then again every PollInterval, until ctx
// ends. A file is read again only when its size, times or inode change.
func (s *Source) Start(ctx context.Context) error {
	s.log.Info("serving static pods", "node", s.node)
	s.poll()
	close(s.synced)
	ticker := time.NewTicker(s.interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
			s.poll()
		}
	}
}

// Get returns a copy of the static pod namespace/name.
func (s *Source) Get(namespace, name string) (*corev1.Pod, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, ok := s.pods[namespace+"/"+name]
	if !ok {
		return nil, false
	}
	return p.pod.DeepCopy(), true
}

// List returns a copy of every static pod, ordered by key.
func (s *Source) List() []*corev1.Pod {
	s.mu.RLock()
	defer s.mu.RUnlock()
	keys := make([]string, 0, len(s.pods))
	for key := range s.pods {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	out := make([]*corev1.Pod, 0, len(keys))
	for _, key := range keys {
		out = append(out, s.pods[key].pod.DeepCopy())
	}
	return out
}

// poll brings the files up to date with the directory and publishes the
// pods that changed.
func (s *Source) poll() {
	entries, err := os.ReadDir(s.dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		s.note(s.dir, "the static pod directory does not exist: no static pods", nil)
		entries = nil
	case err != nil:
		// Keep what was read before: a directory that cannot be read for
		// a while does not stop the pods.
		s.note(s.dir, "cannot read the static pod directory", err)
		return
	default:
		s.forget(s.dir)
	}
	present := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		path := filepath.Join(s.dir, name)
		present[path] = true
		if !isManifestName(name) {
			s.note(path, "not a manifest (not *.yaml, *.yml or *.json): ignored", nil)
			continue
		}
		fi, err := os.Stat(path) // follows symbolic links
		switch {
		case errors.Is(err, fs.ErrNotExist):
			delete(present, path) // removed since the listing (or a dangling link)
			continue
		case err != nil:
			s.note(path, "cannot read static pod manifest: skipped", err)
			continue
		case fi.IsDir():
			s.note(path, "a directory in the static pod directory is not read", nil)
			continue
		case !fi.Mode().IsRegular():
			s.note(path, "static pod manifest is not a regular file: skipped", nil)
			continue
		}
		id := identify(fi)
		prev, ok := s.files[path]
		if ok && prev.id == id {
			continue
		}
		s.forget(path)
		s.files[path] = s.read(path, id, prev)
	}
	for path := range s.files {
		if !present[path] {
			delete(s.files, path)
		}
	}
	for path := range s.noted {
		if path != s.dir && !present[path] {
			delete(s.noted, path)
		}
	}
	s.publish()
}

// read reads and decodes one manifest (prev is what the last read of
// path gave, if any). A file that changed while it was read, or so shortly
// before that a later change could keep its times and size, gets a zero
// id, so the next poll reads it again. An error is logged once per file
// version, not again when a re-read finds the same.
func (s *Source) read(path string, id fileID, prev *manifest) *manifest {
	data, err := readAtMost(path, MaxManifestBytes)
	if fi, statErr := os.Stat(path); err == nil && (statErr != nil || identify(fi) != id || id.recent(time.Now())) {
		id = fileID{}
	}
	m := &manifest{id: id}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return m
		}
		m.err = "cannot read static pod manifest: " + err.Error()
	} else if m.pod, m.fingerprint, err = parseManifest(data, path, s.node); err != nil {
		m.err = "invalid static pod manifest: " + err.Error()
	}
	if m.err != "" && (prev == nil || prev.err != m.err) {
		s.log.Error("static pod manifest skipped", "path", path, "err", m.err)
	}
	return m
}

// recent reports whether the file was changed so shortly before now that
// a later change might not show in its times (coarse timestamps).
func (id fileID) recent(now time.Time) bool {
	const window = time.Second
	latest := max(id.mtime, id.ctime)
	return now.UnixNano()-latest < int64(window)
}

// publish makes the pods of the files the served ones and tells OnChange
// about each that was added, changed or removed. When two files hold pods
// of the same name, the first in path order wins, as upstream.
func (s *Source) publish() {
	paths := make([]string, 0, len(s.files))
	for path := range s.files {
		paths = append(paths, path)
	}
	slices.Sort(paths)
	want := map[string]*served{}
	for _, path := range paths {
		m := s.files[path]
		if m.pod == nil {
			continue
		}
		key := m.pod.Namespace + "/" + m.pod.Name
		if first, dup := want[key]; dup {
			if m.shadowedBy != first.path {
				s.log.Error("static pod manifest holds a pod of the same name as another: skipped",
					"path", path, "pod", key, "other", first.path)
				m.shadowedBy = first.path
			}
			continue
		}
		m.shadowedBy = ""
		want[key] = &served{pod: m.pod, path: path, fingerprint: m.fingerprint}
	}

	var changed []string
	now := seen(s.now())
	s.mu.Lock()
	for key, w := range want {
		if old, ok := s.pods[key]; ok && old.path == w.path && old.fingerprint == w.fingerprint {
			want[key] = old // keeps config.seen
			continue
		}
		pod := w.pod.DeepCopy()
		pod.Annotations[AnnotationSeen] = now
		w.pod = pod
		changed = append(changed, key)
		s.log.Info("static pod", "pod", key, "path", w.path, "uid", pod.UID)
	}
	for key, old := range s.pods {
		if _, ok := want[key]; !ok {
			changed = append(changed, key)
			s.log.Info("static pod removed", "pod", key, "path", old.path)
		}
	}
	s.pods = want
	s.mu.Unlock()

	slices.Sort(changed)
	if s.onChange != nil {
		for _, key := range changed {
			s.onChange(key)
		}
	}
}

// note logs once why path is not read (again when the reason changes).
func (s *Source) note(path, why string, err error) {
	reason := why
	if err != nil {
		reason += ": " + err.Error()
	}
	if s.noted[path] == reason {
		return
	}
	s.noted[path] = reason
	if err != nil {
		s.log.Error(why, "path", path, "err", err)
	} else {
		s.log.Warn(why, "path", path)
	}
}

func (s *Source) forget(path string) { delete(s.noted, path) }

func isManifestName(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// readAtMost reads the file at path, refusing one larger than limit.
func readAtMost(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, errors.New("the manifest is larger than 10 MiB")
	}
	return data, nil
}
