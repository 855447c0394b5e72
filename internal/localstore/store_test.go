package localstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"orch/internal/envtest"
)

const podsKey = "/api/v1/pods?fieldSelector=spec.nodeName=n1"

func openStore(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir, Options{Log: envtest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func podJSON(name, rv string) string {
	return fmt.Sprintf(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":%q,"namespace":"ns","resourceVersion":%q},"spec":{"nodeName":"n1"}}`, name, rv)
}

func podList(rv string, pods ...string) []byte {
	return []byte(fmt.Sprintf(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":%q},"items":[%s]}`, rv, strings.Join(pods, ",")))
}

// stored is the stored collection as name → resource version, and its
// resource version.
func stored(t *testing.T, s *Store, key string) (map[string]string, string) {
	t.Helper()
	s.flush()
	body, ok, err := s.listBody(key)
	if err != nil || !ok {
		t.Fatalf("collection %q: ok=%v err=%v", key, ok, err)
	}
	var l listJSON
	if err := json.Unmarshal(body, &l); err != nil {
		t.Fatalf("the store's list answer is not JSON: %v\n%s", err, body)
	}
	got := map[string]string{}
	for _, raw := range l.Items {
		var m objectMeta
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		got[m.Metadata.Name] = m.Metadata.ResourceVersion
	}
	if l.Kind != "PodList" || l.APIVersion != "v1" {
		t.Errorf("list answer is a %s %s, want a v1 PodList", l.APIVersion, l.Kind)
	}
	return got, l.Metadata.ResourceVersion
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// stream is a JSON watch stream of events (type, object).
func stream(events ...[2]string) io.ReadCloser {
	var b bytes.Buffer
	for _, ev := range events {
		fmt.Fprintf(&b, "{\"type\":%q,\"object\":%s}\n", ev[0], ev[1])
	}
	return io.NopCloser(&b)
}

// readAll reads a recorded watch to its end, as a reflector would.
func readAll(t *testing.T, body io.ReadCloser) {
	t.Helper()
	if _, err := io.Copy(io.Discard, body); err != nil {
		t.Fatal(err)
	}
	body.Close()
}

func bookmark(rv string, end bool) string {
	ann := ""
	if end {
		ann = `,"annotations":{"k8s.io/initial-events-end":"true"}`
	}
	return fmt.Sprintf(`{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":%q%s}}`, rv, ann)
}

func TestListThenWatch(t *testing.T) {
	s := openStore(t, t.TempDir())
	if err := s.recordList(request{kind: list, key: podsKey}, podList("10", podJSON("a", "5"), podJSON("b", "9"))); err != nil {
		t.Fatal(err)
	}
	if got, rv := stored(t, s, podsKey); !equal(got, map[string]string{"a": "5", "b": "9"}) || rv != "10" {
		t.Fatalf("after the list: %v at %s", got, rv)
	}

	// A watch that does not start where the store is records nothing.
	w := request{kind: watch, key: podsKey, resourceVersion: "7"}
	readAll(t, s.recordWatch(w, stream([2]string{"ADDED", podJSON("z", "8")})))
	if got, _ := stored(t, s, podsKey); got["z"] != "" {
		t.Fatal("a watch from resource version 7 was recorded into a collection at 10")
	}

	// One that continues it does: changes, deletions, bookmarks; an
	// object older than the stored one is not put back.
	w.resourceVersion = "10"
	readAll(t, s.recordWatch(w, stream(
		[2]string{"MODIFIED", podJSON("a", "11")},
		[2]string{"DELETED", podJSON("b", "12")},
		[2]string{"ADDED", podJSON("c", "13")},
		[2]string{"MODIFIED", podJSON("a", "6")},
		[2]string{"BOOKMARK", bookmark("20", false)},
	)))
	if got, rv := stored(t, s, podsKey); !equal(got, map[string]string{"a": "11", "c": "13"}) || rv != "20" {
		t.Fatalf("after the watch: %v at %s", got, rv)
	}

	// Only one watch records at a time.
	done, ok := s.startRecording(podsKey, "20")
	if !ok {
		t.Fatal("a watch from the stored resource version may not record")
	}
	if _, ok := s.startRecording(podsKey, "20"); ok {
		t.Fatal("two watches record into one collection")
	}
	done()

	// The store survives a restart with the collection and its version.
	dir := filepath.Dir(s.db.Path())
	s.Close()
	s = openStore(t, dir)
	if got, rv := stored(t, s, podsKey); !equal(got, map[string]string{"a": "11", "c": "13"}) || rv != "20" {
		t.Fatalf("after reopening: %v at %s", got, rv)
	}
	if done, ok := s.startRecording(podsKey, "20"); !ok {
		t.Fatal("after reopening, a watch from the stored version may not record")
	} else {
		done()
	}
}

func TestWatchWithInitialEvents(t *testing.T) {
	s := openStore(t, t.TempDir())
	s.recordList(request{kind: list, key: podsKey}, podList("10", podJSON("old", "5")))
	w := request{kind: watch, key: podsKey, initialEvents: true}
	// A stream that ends before its initial events do changes nothing.
	readAll(t, s.recordWatch(w, stream([2]string{"ADDED", podJSON("x", "30")})))
	if got, _ := stored(t, s, podsKey); !equal(got, map[string]string{"old": "5"}) {
		t.Fatalf("unfinished initial events were recorded: %v", got)
	}
	readAll(t, s.recordWatch(w, stream(
		[2]string{"ADDED", podJSON("x", "30")},
		[2]string{"ADDED", podJSON("y", "31")},
		[2]string{"BOOKMARK", bookmark("40", true)},
		[2]string{"DELETED", podJSON("x", "41")},
	)))
	if got, rv := stored(t, s, podsKey); !equal(got, map[string]string{"y": "31"}) || rv != "41" {
		t.Fatalf("after the initial events and a deletion: %v at %s", got, rv)
	}
	// An empty collection's bookmark names its type.
	readAll(t, s.recordWatch(w, stream([2]string{"BOOKMARK", bookmark("50", true)})))
	if got, rv := stored(t, s, podsKey); len(got) != 0 || rv != "50" {
		t.Fatalf("an empty collection: %v at %s", got, rv)
	}
	// An ERROR event (e.g. 410 Gone) ends recording; a malformed stream too.
	readAll(t, s.recordWatch(request{kind: watch, key: podsKey, resourceVersion: "50"}, stream(
		[2]string{"ERROR", `{"kind":"Status","apiVersion":"v1","code":410}`},
		[2]string{"ADDED", podJSON("late", "60")},
	)))
	readAll(t, s.recordWatch(request{kind: watch, key: podsKey, resourceVersion: "50"}, io.NopCloser(strings.NewReader(`{"type":"ADDED","object":{`))))
	if got, _ := stored(t, s, podsKey); len(got) != 0 {
		t.Fatalf("events after an ERROR were recorded: %v", got)
	}
}

func TestPagesAreNotTheCollection(t *testing.T) {
	s := openStore(t, t.TempDir())
	s.recordList(request{kind: list, key: podsKey}, podList("10", podJSON("a", "5")))
	first := []byte(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"12","continue":"tok"},"items":[]}`)
	s.recordList(request{kind: list, key: podsKey}, first)
	s.flush()
	if _, ok, _ := s.listBody(podsKey); ok {
		t.Fatal("a first page left the stored collection in place")
	}
	if _, ok := s.answer(nil, request{kind: list, key: podsKey, page: true}); ok {
		t.Fatal("the store answered a request for a next page")
	}
}

func TestSecretsAndTokensAreSealed(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	const secret = `{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s","namespace":"ns"},"data":{"k":"c2VjcmV0LXZhbHVl"}}`
	s.putObject("/api/v1/namespaces/ns/secrets/s", []byte(secret), true)
	s.putToken("/api/v1/namespaces/ns/serviceaccounts/default/token#1", []byte(`{"status":{"token":"eyJhbGciOiJ0b2tlbi12YWx1ZQ"}}`), time.Now().Add(time.Hour))
	s.putToken("/api/v1/namespaces/ns/serviceaccounts/default/token#2", []byte(`{"status":{"token":"expired"}}`), time.Now().Add(-time.Second))
	s.flush()
	got, ok, err := s.object("/api/v1/namespaces/ns/secrets/s")
	if err != nil || !ok || string(got) != secret {
		t.Fatalf("stored Secret: %q ok=%v err=%v", got, ok, err)
	}
	if body, ok, err := s.token("/api/v1/namespaces/ns/serviceaccounts/default/token#1"); err != nil || !ok || !strings.Contains(string(body), "eyJhbGciOiJ0b2tlbi12YWx1ZQ") {
		t.Fatalf("stored token: %q ok=%v err=%v", body, ok, err)
	}
	if _, ok, _ := s.token("/api/v1/namespaces/ns/serviceaccounts/default/token#2"); ok {
		t.Fatal("an expired token was given")
	}
	s.Close()
	raw, err := os.ReadFile(filepath.Join(dir, DBFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, plain := range []string{"c2VjcmV0LXZhbHVl", "eyJhbGciOiJ0b2tlbi12YWx1ZQ"} {
		if bytes.Contains(raw, []byte(plain)) {
			t.Errorf("%s is in the store file in the clear", plain)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, KeyFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	// Another key cannot open what this one sealed.
	if err := os.WriteFile(filepath.Join(dir, KeyFile), bytes.Repeat([]byte{7}, 32), 0o600); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir)
	if _, ok, err := s.object("/api/v1/namespaces/ns/secrets/s"); ok || err == nil {
		t.Fatalf("a Secret opened with another key: ok=%v err=%v", ok, err)
	}
}

func TestCollectKeepsWhatPodsUse(t *testing.T) {
	s := openStore(t, t.TempDir())
	pod := `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns","resourceVersion":"3"},
	  "spec":{"nodeName":"n1","serviceAccountName":"app","containers":[{"name":"c","image":"i",
	  "envFrom":[{"configMapRef":{"name":"env"}}],"env":[{"name":"X","valueFrom":{"secretKeyRef":{"name":"envsecret","key":"k"}}}]}],
	  "volumes":[{"name":"v","secret":{"secretName":"vol"}},{"name":"data","persistentVolumeClaim":{"claimName":"claim"}},
	  {"name":"scratch","ephemeral":{"volumeClaimTemplate":{"spec":{}}}},
	  {"name":"proj","projected":{"sources":[{"configMap":{"name":"projcm"}}]}}]}}`
	s.recordList(request{kind: list, key: podsKey}, podList("4", pod))
	objects := map[string]string{
		"/api/v1/namespaces/ns/configmaps/env":                   "{}",
		"/api/v1/namespaces/ns/secrets/envsecret":                "{}",
		"/api/v1/namespaces/ns/secrets/vol":                      "{}",
		"/api/v1/namespaces/ns/configmaps/projcm":                "{}",
		"/api/v1/namespaces/ns/persistentvolumeclaims/claim":     `{"spec":{"volumeName":"pv1"}}`,
		"/api/v1/namespaces/ns/persistentvolumeclaims/p-scratch": "{}",
		"/api/v1/persistentvolumes/pv1":                          "{}",
		"/api/v1/nodes/n1":                                       "{}",
		"/api/v1/namespaces/ns/serviceaccounts/app":              "{}",
		"/api/v1/namespaces/ns/pods/p":                           "{}",
		// Nothing uses these.
		"/api/v1/namespaces/ns/secrets/gone":    "{}",
		"/api/v1/namespaces/other/secrets/vol":  "{}",
		"/api/v1/persistentvolumes/pv2":         "{}",
		"/api/v1/nodes/n2":                      "{}",
		"/api/v1/namespaces/ns/configmaps/gone": "{}",
	}
	for k, v := range objects {
		s.putObject(k, []byte(v), false)
	}
	s.putToken("/api/v1/namespaces/ns/serviceaccounts/app/token#a", []byte("{}"), time.Now().Add(time.Hour))
	s.putToken("/api/v1/namespaces/ns/serviceaccounts/app/token#old", []byte("{}"), time.Now().Add(-time.Hour))
	s.putToken("/api/v1/namespaces/ns/serviceaccounts/default/token#a", []byte("{}"), time.Now().Add(time.Hour))
	s.flush()
	s.enqueue(s.collect)
	s.flush()
	for k := range objects {
		_, ok, err := s.object(k)
		if err != nil {
			t.Fatal(err)
		}
		want := !strings.Contains(k, "gone") && !strings.Contains(k, "other") && !strings.HasSuffix(k, "pv2") && !strings.HasSuffix(k, "n2")
		if ok != want {
			t.Errorf("%s kept=%v, want %v", k, ok, want)
		}
	}
	for k, want := range map[string]bool{"app/token#a": true, "app/token#old": false, "default/token#a": false} {
		var ok bool
		s.db.View(func(tx *bolt.Tx) error {
			ok = tx.Bucket(tokensBucket).Get([]byte("/api/v1/namespaces/ns/serviceaccounts/"+k)) != nil
			return nil
		})
		if ok != want {
			t.Errorf("token %s kept=%v, want %v", k, ok, want)
		}
	}
}

// FuzzRecordWatch: whatever a watch stream holds, recording it neither
// panics nor leaves a collection whose list answer is not a JSON list.
func FuzzRecordWatch(f *testing.F) {
	f.Add([]byte(`{"type":"ADDED","object":`+podJSON("a", "11")+`}`), false)
	f.Add([]byte(`{"type":"BOOKMARK","object":`+bookmark("12", true)+`}`), true)
	f.Add([]byte(`{"type":"DELETED","object":{"metadata":{"name":"a","resourceVersion":"x"}}}{"type":"ADDED","object":[]}`), false)
	s, err := Open(f.TempDir(), Options{Log: envtest.Logger()})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	f.Fuzz(func(t *testing.T, data []byte, initial bool) {
		if err := s.recordList(request{kind: list, key: podsKey}, podList("10", podJSON("a", "5"))); err != nil {
			t.Fatal(err)
		}
		s.flush()
		w := request{kind: watch, key: podsKey, resourceVersion: "10", initialEvents: initial}
		readAll(t, s.recordWatch(w, io.NopCloser(bytes.NewReader(data))))
		s.flush()
		body, ok, err := s.listBody(podsKey)
		if err != nil || !ok {
			t.Fatalf("the collection is gone: ok=%v err=%v", ok, err)
		}
		var l listJSON
		if err := json.Unmarshal(body, &l); err != nil {
			t.Fatalf("the list answer is not JSON after %q: %v\n%s", data, err, body)
		}
	})
}
