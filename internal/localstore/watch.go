package localstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// initialEventsEnd is the annotation of the bookmark that ends a watch's
// initial events (metav1.InitialEventsAnnotationKey).
const initialEventsEnd = "k8s.io/initial-events-end"

// objectMeta is the part of an object the store reads.
type objectMeta struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	Metadata   struct {
		Name            string            `json:"name"`
		Namespace       string            `json:"namespace"`
		ResourceVersion string            `json:"resourceVersion"`
		Continue        string            `json:"continue"`
		Annotations     map[string]string `json:"annotations"`
	} `json:"metadata"`
}

func (m objectMeta) name() string { return m.Metadata.Namespace + "/" + m.Metadata.Name }

// objectRV is an object's resource version ("" when it has none).
func objectRV(obj []byte) string {
	var m objectMeta
	_ = json.Unmarshal(obj, &m)
	return m.Metadata.ResourceVersion
}

// listJSON is a list answer: a collection's type, version and items.
type listJSON struct {
	objectMeta
	Items []json.RawMessage `json:"items"`
}

// recordList makes a whole list the collection's members; a page (the
// list goes on) makes the stored collection unknown.
func (s *Store) recordList(r request, body []byte) error {
	var l listJSON
	if err := json.Unmarshal(body, &l); err != nil {
		s.forget(r.key)
		return err
	}
	if r.page || l.Metadata.Continue != "" {
		s.forget(r.key)
		return nil
	}
	if l.Metadata.ResourceVersion == "" || !strings.HasSuffix(l.Kind, "List") {
		s.forget(r.key)
		return fmt.Errorf("a %q list without a resource version", l.Kind)
	}
	items := make(map[string][]byte, len(l.Items))
	for _, raw := range l.Items {
		var m objectMeta
		if err := json.Unmarshal(raw, &m); err != nil || m.Metadata.Name == "" {
			s.forget(r.key)
			return fmt.Errorf("an item without a name: %v", err)
		}
		items[m.name()] = raw
	}
	s.replace(r.key, collectionMeta{Kind: l.Kind, APIVersion: l.APIVersion, ResourceVersion: l.Metadata.ResourceVersion}, items)
	return nil
}

// listBody is a stored collection as a list answer.
func (s *Store) listBody(key string) ([]byte, bool, error) {
	m, items, ok, err := s.collection(key)
	if !ok || err != nil {
		return nil, false, err
	}
	var b bytes.Buffer
	head, _ := json.Marshal(struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
	}{m.Kind, m.APIVersion})
	rv, _ := json.Marshal(m.ResourceVersion)
	b.Write(head[:len(head)-1])
	fmt.Fprintf(&b, `,"metadata":{"resourceVersion":%s},"items":[`, rv)
	for i, item := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(item)
	}
	b.WriteString("]}")
	return b.Bytes(), true, nil
}

// watchEvent is one event of a JSON watch stream.
type watchEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// recordWatch returns body with the stream's events recorded as they are
// read: a watch with initial events replaces the collection when its
// initial events end, and then records what follows; another records only
// if it continues the stored collection (see startRecording).
func (s *Store) recordWatch(r request, body io.ReadCloser) io.ReadCloser {
	w := &watchRecorder{s: s, r: r}
	if !r.initialEvents {
		done, ok := s.startRecording(r.key, r.resourceVersion)
		if !ok {
			return body
		}
		w.done = done
	} else {
		w.staged = map[string][]byte{}
	}
	pr, pw := io.Pipe()
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		w.decode(pr)
	}()
	return &teeBody{body: body, pw: pw, finished: finished}
}

// teeBody hands what the caller reads to the recorder too; Close waits
// until the recorder has queued what it read.
type teeBody struct {
	body     io.ReadCloser
	pw       *io.PipeWriter
	finished chan struct{}
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.body.Read(p)
	if n > 0 {
		_, _ = t.pw.Write(p[:n]) // the decoder reads until the pipe closes
	}
	if err != nil {
		t.pw.CloseWithError(err)
	}
	return n, err
}

func (t *teeBody) Close() error {
	t.pw.Close()
	err := t.body.Close()
	<-t.finished
	return err
}

// watchRecorder records one watch stream.
type watchRecorder struct {
	s    *Store
	r    request
	done func() // ends the recording; nil while there is none
	// staged are the initial events not yet ended by their bookmark.
	staged   map[string][]byte
	kind     string
	versions string
}

// decode reads events until the stream ends; once the recorder stops
// recording it only drains, so the reader is never held up.
func (w *watchRecorder) decode(pr *io.PipeReader) {
	defer func() {
		if w.done != nil {
			w.done()
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	dec := json.NewDecoder(pr)
	for {
		var ev watchEvent
		if err := dec.Decode(&ev); err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) {
				w.s.log.Debug("local store: stopped recording a watch", "collection", w.r.key, "err", err)
			}
			return
		}
		if !w.handle(ev) {
			return
		}
	}
}

// handle records one event; false stops the recording.
func (w *watchRecorder) handle(ev watchEvent) bool {
	var m objectMeta
	if err := json.Unmarshal(ev.Object, &m); err != nil {
		return false
	}
	rv := m.Metadata.ResourceVersion
	switch ev.Type {
	case "ADDED", "MODIFIED", "DELETED":
		if m.Metadata.Name == "" || rv == "" {
			return false
		}
		w.kind, w.versions = m.Kind, m.APIVersion
		if w.staged != nil {
			if ev.Type == "DELETED" {
				delete(w.staged, m.name())
			} else {
				w.staged[m.name()] = ev.Object
			}
			return true
		}
		w.s.apply(w.r.key, event{deleted: ev.Type == "DELETED", name: m.name(), rv: rv, object: ev.Object})
		return true
	case "BOOKMARK":
		if rv == "" {
			return false
		}
		if w.staged == nil {
			w.s.apply(w.r.key, event{rv: rv})
			return true
		}
		if m.Metadata.Annotations[initialEventsEnd] != "true" {
			return true
		}
		kind, versions := w.kind, w.versions
		if kind == "" { // an empty collection: the bookmark names the type
			kind, versions = m.Kind, m.APIVersion
		}
		if kind == "" {
			return false
		}
		w.s.replace(w.r.key, collectionMeta{Kind: kind + "List", APIVersion: versions, ResourceVersion: rv}, w.staged)
		w.staged = nil
		done, ok := w.s.startRecording(w.r.key, rv)
		w.done = done
		return ok
	}
	return false // ERROR: the stream ends; the reflector lists again
}
