package manifests

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// Applier applies every manifest in Dir at start and whenever a file is
// added or changed. It is a run.Runnable.
type Applier struct {
	// Dir is the manifests directory (data-dir/server/manifests); Start
	// creates it when missing.
	Dir string
	// Config reaches the apiserver.
	Config *rest.Config
	// Log is the applier's logger; nil means slog.Default().
	Log *slog.Logger

	// interval is the time between scans of Dir; 0 means 2 s.
	interval time.Duration
}

const (
	defaultInterval = 2 * time.Second
	// maxBackoff caps the wait before a failed file is tried again.
	maxBackoff = time.Minute
)

// fileState is what the applier remembers of a file between scans.
type fileState struct {
	size    int64
	modTime time.Time
	sum     [sha256.Size]byte
	// failures counts the attempts that failed since the content last
	// changed; 0 means the content is applied.
	failures int
	retryAt  time.Time
}

// Start scans Dir until ctx ends. It fails only when it cannot start:
// the directory cannot be created or the clients cannot be made. A file
// that does not apply is logged, recorded in an Event and tried again
// with backoff.
func (a *Applier) Start(ctx context.Context) error {
	log := a.Log
	if log == nil {
		log = slog.Default()
	}
	if err := os.MkdirAll(a.Dir, 0o700); err != nil {
		return fmt.Errorf("create the manifests directory: %w", err)
	}
	dyn, err := dynamic.NewForConfig(a.Config)
	if err != nil {
		return err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(a.Config)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(a.Config)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	if host == "" {
		host = "orch"
	}
	s := &scanner{
		dir: a.Dir, log: log,
		objects: &objectApplier{dynamic: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))},
		events:  &recorder{client: kube, instance: host, now: time.Now},
		files:   map[string]*fileState{},
		now:     time.Now,
	}
	interval := a.interval
	if interval <= 0 {
		interval = defaultInterval
	}
	log.Info("applying manifests", "dir", a.Dir)
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		s.scan(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// scanner is the state of one running Applier.
type scanner struct {
	dir     string
	log     *slog.Logger
	objects *objectApplier
	events  *recorder
	files   map[string]*fileState
	now     func() time.Time
}

// isManifest tells whether a directory entry is a manifest to apply:
// *.yaml, *.yml or *.json, not hidden, and without a NAME.skip beside it.
func isManifest(name string, skips map[string]bool) bool {
	if strings.HasPrefix(name, ".") || skips[name] {
		return false
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// scan applies the files that are new, changed, or failed and due again.
func (s *scanner) scan(ctx context.Context) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		s.log.Warn("cannot read the manifests directory", "dir", s.dir, "err", err)
		return
	}
	skips := map[string]bool{}
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".skip"); ok {
			skips[name] = true
		}
	}
	seen := map[string]bool{}
	for _, e := range entries {
		if ctx.Err() != nil {
			return
		}
		name := e.Name()
		if e.IsDir() || !isManifest(name, skips) {
			continue
		}
		seen[name] = true
		info, err := e.Info()
		if err != nil {
			continue // removed since ReadDir
		}
		s.check(ctx, name, info)
	}
	for name := range s.files {
		if !seen[name] {
			delete(s.files, name) // added again later, it is applied again
		}
	}
}

// check applies one file if it needs to be.
func (s *scanner) check(ctx context.Context, name string, info os.FileInfo) {
	st := s.files[name]
	now := s.now()
	unchanged := st != nil && st.size == info.Size() && st.modTime.Equal(info.ModTime())
	if unchanged && (st.failures == 0 || now.Before(st.retryAt)) {
		return
	}
	path := filepath.Join(s.dir, name)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	sum := sha256.Sum256(data)
	if st != nil && err == nil && st.sum == sum {
		st.size, st.modTime = info.Size(), info.ModTime() // touched, same content
		if st.failures == 0 || now.Before(st.retryAt) {
			return
		}
	}
	if st == nil || st.sum != sum {
		st = &fileState{}
		s.files[name] = st
	}
	st.size, st.modTime, st.sum = info.Size(), info.ModTime(), sum
	if err == nil {
		err = s.apply(ctx, path, data)
	} else {
		s.record(ctx, fileRef, corev1.EventTypeWarning, ReasonFailed, fmt.Sprintf("Cannot read manifest %s: %v", path, err))
	}
	if err == nil {
		st.failures = 0
		return
	}
	if ctx.Err() != nil {
		return
	}
	if errors.Is(err, ErrInvalid) {
		// Trying the same content again gives the same error: wait for a change.
		s.log.Warn("manifest not applied; fix the file", "file", path, "err", err)
		return
	}
	st.failures++
	wait := min(defaultInterval<<min(st.failures-1, 10), maxBackoff)
	st.retryAt = now.Add(wait)
	s.log.Warn("manifest not applied; will try again", "file", path, "attempt", st.failures, "retry-in", wait.String(), "err", err)
}

// apply parses and applies one file: every object is tried even when an
// earlier one fails; the error joins the failures.
func (s *scanner) apply(ctx context.Context, path string, data []byte) error {
	objs, err := Parse(path, data)
	if err != nil {
		s.record(ctx, fileRef, corev1.EventTypeWarning, ReasonFailed, err.Error())
		return err
	}
	var errs []error
	for _, obj := range objs {
		what := describe(obj)
		applied, err := s.objects.apply(ctx, obj)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			err = fmt.Errorf("%s: %w", what, err)
			errs = append(errs, err)
			s.record(ctx, ref(obj), corev1.EventTypeWarning, ReasonFailed, fmt.Sprintf("Cannot apply %s from manifest %s: %v", what, path, err))
			continue
		}
		s.log.Info("applied manifest object", "file", path, "object", describe(applied))
		s.record(ctx, ref(applied), corev1.EventTypeNormal, ReasonApplied, fmt.Sprintf("Applied %s from manifest %s", describe(applied), path))
	}
	return errors.Join(errs...)
}

// record writes an Event and logs when it cannot.
func (s *scanner) record(ctx context.Context, about corev1.ObjectReference, eventType, reason, message string) {
	if err := s.events.event(ctx, about, eventType, reason, message); err != nil && ctx.Err() == nil {
		s.log.Warn("cannot record an event", "reason", reason, "message", message, "err", err)
	}
}

// describe names an object as "Kind namespace/name" or "Kind name".
func describe(obj interface {
	GetKind() string
	GetNamespace() string
	GetName() string
}) string {
	if obj.GetNamespace() == "" {
		return fmt.Sprintf("%s %s", obj.GetKind(), obj.GetName())
	}
	return fmt.Sprintf("%s %s/%s", obj.GetKind(), obj.GetNamespace(), obj.GetName())
}
