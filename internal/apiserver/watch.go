package apiserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"orch/internal/storage"
)

// bookmarkInterval is how often a watch that allows bookmarks gets one.
const bookmarkInterval = time.Minute

// initialEventsEnd is the bookmark annotation that ends the initial events of
// a watch with sendInitialEvents=true (the WatchList protocol).
const initialEventsEnd = "k8s.io/initial-events-end"

// maxWatchTimeout is the longest a watch runs before the server ends it
// (the client then resumes from its last resource version).
const maxWatchTimeout = time.Hour

func (s *Server) watch(w http.ResponseWriter, r *http.Request, info requestInfo, rs *resourceStore) {
	opts, out, sel, err := s.listRequest(r, rs, "Table", "PartialObjectMetadata")
	if err != nil {
		s.respondError(w, r, err, rs.gr, "")
		return
	}
	if info.Name != "" { // legacy /watch/RESOURCE/NAME
		sel.fields = andName(sel.fields, info.Name)
	}
	wopts, err := s.watchStart(r.Context(), rs, opts)
	if err != nil {
		s.respondError(w, r, err, rs.gr, "")
		return
	}
	// As upstream's --min-request-timeout of 1800 s: a watch lasts 30 to
	// 60 minutes, spreading relists; one may ask for less, never more.
	timeout := time.Duration(1800+rand.IntN(1800)) * time.Second
	if opts.TimeoutSeconds != nil && *opts.TimeoutSeconds > 0 && time.Duration(*opts.TimeoutSeconds)*time.Second < maxWatchTimeout {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	events, err := rs.cache.Watch(ctx, wopts)
	if errors.Is(err, storage.ErrCompacted) {
		// Older than the cache's history (e.g. just after a restart) but maybe
		// still in etcd's: resume from etcd rather than force a relist.
		events, err = rs.watchStorage(ctx, wopts.Revision)
	}
	if err != nil {
		s.respondError(w, r, err, rs.gr, "")
		return
	}
	stream := newWatchStream(s, w, r, rs, out)
	stream.run(ctx, events, sel, info.Namespace, opts.AllowWatchBookmarks, wopts.Revision)
}

// watchStorage follows etcd directly from revision, decoding each event for
// this one watcher.
func (rs *resourceStore) watchStorage(ctx context.Context, revision int64) (<-chan storage.CachedEvent, error) {
	current, err := rs.store.CurrentRevision(ctx)
	if err != nil {
		return nil, err
	}
	if revision > current {
		return nil, fmt.Errorf("resource version %d is newer than the store (%d): %w", revision, current, storage.ErrFuture)
	}
	in := rs.store.Watch(ctx, rs.prefix, revision)
	out := make(chan storage.CachedEvent)
	go func() {
		defer close(out)
		for ev := range in {
			ce := storage.CachedEvent{Type: ev.Type, Key: ev.KV.Key, Revision: ev.KV.Revision, Err: ev.Err}
			switch ev.Type {
			case storage.Progress:
				continue
			case storage.Error:
			default:
				obj, err := rs.decode(ev.KV)
				if err != nil {
					ce = storage.CachedEvent{Type: storage.Error, Err: err}
					break
				}
				ce.Value = obj
				if ev.Prev != nil {
					if prev, err := rs.decode(*ev.Prev); err == nil {
						ce.Prev = prev
					}
				}
			}
			select {
			case out <- ce:
			case <-ctx.Done():
				return
			}
			if ce.Type == storage.Error {
				return
			}
		}
	}()
	return out, nil
}

// watchStart turns the list options of a watch into where the cache starts.
func (s *Server) watchStart(ctx context.Context, rs *resourceStore, opts metav1.ListOptions) (storage.WatchOptions, error) {
	rv, err := parseRV(opts.ResourceVersion)
	if err != nil {
		return storage.WatchOptions{}, err
	}
	initial := opts.ResourceVersion == "" || opts.ResourceVersion == "0"
	if opts.SendInitialEvents != nil {
		if !opts.AllowWatchBookmarks || opts.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan {
			return storage.WatchOptions{}, badRequest("sendInitialEvents needs allowWatchBookmarks=true and resourceVersionMatch=NotOlderThan")
		}
		initial = *opts.SendInitialEvents
	} else if opts.ResourceVersionMatch != "" {
		return storage.WatchOptions{}, badRequest("resourceVersionMatch is only allowed on a watch with sendInitialEvents")
	}
	wopts := storage.WatchOptions{Revision: rv, Initial: initial, MinRevision: rv}
	if initial {
		wopts.InitialBookmark = opts.SendInitialEvents != nil
		if opts.ResourceVersion == "" {
			if wopts.MinRevision, err = rs.store.CurrentRevision(ctx); err != nil {
				return wopts, err
			}
		}
	}
	return wopts, nil
}

// watchStream writes watch events to one client.
type watchStream struct {
	s     *Server
	w     http.ResponseWriter
	r     *http.Request
	rs    *resourceStore
	out   output
	frame interface{ Write([]byte) (int, error) }
}

func newWatchStream(s *Server, w http.ResponseWriter, r *http.Request, rs *resourceStore, out output) *watchStream {
	return &watchStream{s: s, w: w, r: r, rs: rs, out: out}
}

// run streams events until ctx ends or the events stop. With bookmarks, a
// BOOKMARK carrying the last revision sent (at first: the one the watch
// started from) goes out every bookmarkInterval.
func (ws *watchStream) run(ctx context.Context, events <-chan storage.CachedEvent, sel selection, namespace string, bookmarks bool, lastRevision int64) {
	flusher, _ := ws.w.(http.Flusher)
	ws.w.Header().Set("Content-Type", ws.out.mediaType)
	ws.w.Header().Set("Transfer-Encoding", "chunked")
	ws.w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	ws.frame = ws.out.info.StreamSerializer.Framer.NewFrameWriter(ws.w)
	prefix := ws.rs.listPrefix(namespace)
	ticker := time.NewTicker(bookmarkInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			if bookmarks && lastRevision > 0 {
				if !ws.send("BOOKMARK", ws.bookmark(lastRevision, false)) {
					return
				}
				flusher.Flush()
			}
		case ev, ok := <-events:
			if !ok {
				return
			}
			lastRevision = max(lastRevision, ev.Revision)
			typ, obj := ws.filter(ev, sel, prefix)
			if ev.Type == storage.Bookmark {
				typ, obj = "BOOKMARK", ws.bookmark(ev.Revision, true)
			}
			if ev.Type == storage.Error {
				typ, obj = "ERROR", toStatus(ev.Err, ws.rs.gr, "")
			}
			if obj == nil {
				continue
			}
			if !ws.send(typ, obj) {
				return
			}
			if flusher != nil && len(events) == 0 {
				flusher.Flush()
			}
		}
	}
}

// filter applies the selection and namespace: a modified object that stops
// matching is sent as DELETED, one that starts matching as ADDED.
func (ws *watchStream) filter(ev storage.CachedEvent, sel selection, prefix string) (string, runtime.Object) {
	if ev.Type == storage.Bookmark || ev.Type == storage.Error {
		return "", nil
	}
	if len(ev.Key) < len(prefix) || ev.Key[:len(prefix)] != prefix {
		return "", nil
	}
	obj := ev.Value.(runtime.Object)
	now := sel.matches(obj)
	switch ev.Type {
	case storage.Added:
		if now {
			return "ADDED", obj
		}
	case storage.Deleted:
		if now {
			return "DELETED", obj
		}
	case storage.Modified:
		before := ev.Prev != nil && sel.matches(ev.Prev.(runtime.Object))
		switch {
		case now && before:
			return "MODIFIED", obj
		case now:
			return "ADDED", obj
		case before:
			return "DELETED", obj
		}
	}
	return "", nil
}

func (ws *watchStream) bookmark(revision int64, initialEnd bool) runtime.Object {
	obj := ws.rs.res.New()
	accessor, _ := meta.Accessor(obj)
	accessor.SetResourceVersion(strconv.FormatInt(revision, 10))
	if initialEnd {
		accessor.SetAnnotations(map[string]string{initialEventsEnd: "true"})
	}
	obj.GetObjectKind().SetGroupVersionKind(ws.rs.gvk)
	return obj
}

// send encodes one event; false means the client is gone.
func (ws *watchStream) send(typ string, obj runtime.Object) bool {
	if typ != "ERROR" {
		var err error
		if obj, err = ws.s.transform(ws.r, ws.rs, ws.out, obj, false); err != nil {
			typ, obj = "ERROR", toStatus(err, ws.rs.gr, "")
		}
	}
	ws.s.setKind(obj)
	var raw bytes.Buffer
	if err := ws.out.info.Serializer.Encode(obj, &raw); err != nil {
		ws.s.log.Error("cannot encode a watch event", "err", err)
		return false
	}
	event := &metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: raw.Bytes()}}
	if err := ws.out.info.StreamSerializer.Serializer.Encode(event, ws.frame); err != nil {
		return false
	}
	return true
}
