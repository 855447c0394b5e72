package volumes

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestConfigMapUpdateIsAtomic(t *testing.T) {
	m, client, clk := newManager(t, testConfigMap())
	pod := testPod(cmVolume("cfg", corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}))
	mustSetup(t, m, pod)
	dir := m.VolumeDir(pod.UID, PluginConfigMap, "cfg")
	first, err := os.Readlink(filepath.Join(dir, "..data"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(first, "..2026_11_30_10_00_00.") {
		t.Errorf("data dir = %q, want ..2026_11_30_10_00_00.<random>", first)
	}
	// A reader that opened a file before the update keeps the old content.
	old, err := os.Open(filepath.Join(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()

	// Unchanged: nothing is rewritten.
	clk.Step(time.Minute)
	mustSetup(t, m, pod)
	if again, _ := os.Readlink(filepath.Join(dir, "..data")); again != first {
		t.Fatalf("unchanged ConfigMap rewritten: %s -> %s", first, again)
	}

	// Changed: a new data dir, the old one removed, keys follow.
	cm := testConfigMap()
	cm.Data = map[string]string{"a": "ALPHA", "c": "gamma"}
	cm.BinaryData = nil
	if _, err := client.CoreV1().ConfigMaps("default").Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	mustSetup(t, m, pod)
	second, _ := os.Readlink(filepath.Join(dir, "..data"))
	if second == first || !strings.HasPrefix(second, "..2026_11_30_10_01_00.") {
		t.Fatalf("data dir after update = %q (was %q)", second, first)
	}
	if _, err := os.Stat(filepath.Join(dir, first)); !os.IsNotExist(err) {
		t.Errorf("old data dir still there: %v", err)
	}
	if got := readFile(t, filepath.Join(dir, "a")); got != "ALPHA" {
		t.Errorf("a = %q after update", got)
	}
	if got := readFile(t, filepath.Join(dir, "c")); got != "gamma" {
		t.Errorf("c = %q after update", got)
	}
	for _, gone := range []string{"b", "bin"} {
		if _, err := os.Lstat(filepath.Join(dir, gone)); !os.IsNotExist(err) {
			t.Errorf("removed key %s still visible: %v", gone, err)
		}
	}
	buf := make([]byte, 16)
	n, _ := old.Read(buf)
	if string(buf[:n]) != "alpha" {
		t.Errorf("open file reads %q, want the old content", buf[:n])
	}
	if got := entries(t, dir); len(got) != 4 {
		t.Errorf("entries = %v, want the data dir, ..data, a, c", got)
	}
}

// TestWriteAtomicConsistentReads has a reader resolve ..data and read
// every file below it while a writer changes all of them: whenever the
// reader gets all the files, they are of one version.
func TestWriteAtomicConsistentReads(t *testing.T) {
	m, _, _ := newManager(t)
	dir := t.TempDir()
	payload := func(v int) map[string]fileProjection {
		d := []byte(fmt.Sprint(v))
		return map[string]fileProjection{"a": {Data: d, Mode: 0o644}, "b": {Data: d, Mode: 0o644}, "sub/c": {Data: d, Mode: 0o644}}
	}
	if _, err := m.writeAtomic(dir, payload(0), nil); err != nil {
		t.Fatal(err)
	}
	const versions = 200
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for v := 1; v <= versions; v++ {
			if _, err := m.writeAtomic(dir, payload(v), nil); err != nil {
				t.Errorf("write %d: %v", v, err)
				return
			}
		}
	}()
	consistent := 0
	for stop := false; !stop; {
		select {
		case <-done:
			stop = true
		default:
		}
		target, err := os.Readlink(filepath.Join(dir, "..data"))
		if err != nil {
			t.Fatalf("..data missing during an update: %v", err)
		}
		var got []string
		for _, p := range []string{"a", "b", "sub/c"} {
			data, err := os.ReadFile(filepath.Join(dir, target, p))
			if errors.Is(err, fs.ErrNotExist) {
				break // the writer removed this version meanwhile: read again
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, string(data))
		}
		if len(got) == 3 {
			consistent++
			if got[0] != got[1] || got[1] != got[2] {
				t.Fatalf("inconsistent read of %s: %v", target, got)
			}
		}
	}
	wg.Wait()
	if consistent == 0 {
		t.Error("the reader never completed a read")
	}
	if got := readFile(t, filepath.Join(dir, "sub/c")); got != fmt.Sprint(versions) {
		t.Errorf("final sub/c = %q", got)
	}
	if got := entries(t, dir); len(got) != 5 {
		t.Errorf("entries = %v, want one data dir, ..data, a, b, sub", got)
	}
}

func TestWriteAtomicRejectsBadPaths(t *testing.T) {
	m, _, _ := newManager(t)
	for _, p := range []string{"", "/abs", "../up", "a/../../b", "..hidden", strings.Repeat("x", 256)} {
		if _, err := m.writeAtomic(t.TempDir(), map[string]fileProjection{p: {Data: []byte("x")}}, nil); err == nil || !strings.HasPrefix(err.Error(), "invalid path:") {
			t.Errorf("path %q: error = %v, want invalid path", p, err)
		}
	}
	// Only the top level may not start with "..", as upstream.
	if err := validatePath("a/..b/c"); err != nil {
		t.Errorf("a/..b/c: %v", err)
	}
}

func TestWriteAtomicRemovesEmptiedPayload(t *testing.T) {
	m, _, _ := newManager(t)
	dir := t.TempDir()
	if _, err := m.writeAtomic(dir, map[string]fileProjection{"x/y": {Data: []byte("1")}, "z": {Data: []byte("2")}}, nil); err != nil {
		t.Fatal(err)
	}
	wrote, err := m.writeAtomic(dir, map[string]fileProjection{}, nil)
	if err != nil || !wrote {
		t.Fatalf("write of empty payload: wrote %v, %v", wrote, err)
	}
	if got := entries(t, dir); len(got) != 2 {
		t.Errorf("entries = %v, want only the data dir and ..data", got)
	}
	wrote, err = m.writeAtomic(dir, map[string]fileProjection{}, nil)
	if err != nil || wrote {
		t.Errorf("second write of empty payload: wrote %v, %v", wrote, err)
	}
}
