package etcdsnapshot_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orch/internal/envtest"
	"orch/internal/etcdsnapshot"
)

var quiet = slog.New(slog.DiscardHandler)

// seed starts a member, puts n keys, saves a snapshot, then writes more
// keys and changes one, and returns the member, the snapshot and the keys
// as they were when it was taken.
func seed(t *testing.T, n int) (*member, string, etcdsnapshot.Snapshot, map[string]string) {
	t.Helper()
	dataDir := filepath.Join(t.TempDir(), "etcd")
	m := startEtcd(t, dataDir, "orch", "http://"+envtest.FreeAddr(t))
	c := m.client(t)
	want := map[string]string{}
	for i := range n {
		k, v := fmt.Sprintf("/registry/things/%03d", i), fmt.Sprintf("value-%d", i)
		put(t, c, k, v)
		want[k] = v
	}
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	snap, err := etcdsnapshot.Save(context.Background(), c, t.TempDir(), "", "node1", now)
	if err != nil {
		t.Fatal(err)
	}
	for i := n; i < n+10; i++ {
		put(t, c, fmt.Sprintf("/registry/things/%03d", i), "after")
	}
	put(t, c, "/registry/things/000", "changed after the snapshot")
	return m, dataDir, snap, want
}

func TestSaveWritesSnapshotAndChecksum(t *testing.T) {
	_, _, snap, _ := seed(t, 3)
	if want := fmt.Sprintf("etcd-snapshot-node1-%d.db", time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC).Unix()); snap.Name != want {
		t.Errorf("name = %q, want %q", snap.Name, want)
	}
	data, err := os.ReadFile(snap.Path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if snap.Size != int64(len(data)) || snap.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("snapshot = %+v; the file has %d bytes, sha256 %x", snap, len(data), sum)
	}
	line, err := os.ReadFile(snap.Path + ".sha256")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%x  %s\n", sum, snap.Name); string(line) != want {
		t.Errorf(".sha256 = %q, want sha256sum format %q", line, want)
	}
	if info, _ := os.Stat(snap.Path); info.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600 (a snapshot holds every secret)", info.Mode())
	}
	entries, _ := os.ReadDir(filepath.Dir(snap.Path))
	if len(entries) != 2 {
		t.Errorf("snapshot dir holds %d files, want the snapshot and its checksum only", len(entries))
	}
	if err := etcdsnapshot.Verify(snap.Path); err != nil {
		t.Errorf("Verify of a fresh snapshot: %v", err)
	}
}

func TestRestoreIntoNewDir(t *testing.T) {
	const n = 25
	_, _, snap, want := seed(t, n)
	target := filepath.Join(t.TempDir(), "new", "etcd")
	peer := "http://" + envtest.FreeAddr(t)
	if err := etcdsnapshot.Restore(context.Background(), snap.Path, target, "restored", peer, quiet); err != nil {
		t.Fatal(err)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(target), ".*")); len(leftovers) > 0 {
		t.Errorf("restore left %v behind", leftovers)
	}
	r := startEtcd(t, target, "restored", peer)
	c := r.client(t)
	got := all(t, c)
	if len(got) != n || !maps.Equal(got, want) {
		t.Fatalf("restored keys = %v\nwant exactly %v", got, want)
	}
	// The restored member is a writable cluster of one whose revision is
	// past every revision the old cluster handed out.
	put(t, c, "/registry/things/new", "x")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, "/registry/things/new")
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Revision < etcdsnapshot.RevisionBump {
		t.Errorf("revision after restore = %d, want past %d", resp.Header.Revision, etcdsnapshot.RevisionBump)
	}
	members, err := c.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(members.Members) != 1 || members.Members[0].Name != "restored" || members.Members[0].PeerURLs[0] != peer {
		t.Errorf("members = %+v, want only restored at %s", members.Members, peer)
	}
}

func TestRestoreOverExistingDataMovesItAside(t *testing.T) {
	const n = 7
	m, dataDir, snap, want := seed(t, n)
	peer := m.etcd.Config().AdvertisePeerUrls[0].String()
	m.close() // as `orch server --cluster-reset` runs before etcd starts
	before := listTree(t, dataDir)

	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	if err := etcdsnapshot.Restore(context.Background(), snap.Path, dataDir, "orch", peer, log); err != nil {
		t.Fatal(err)
	}
	old, _ := filepath.Glob(dataDir + "-old-*")
	if len(old) != 1 {
		t.Fatalf("old data dirs = %v, want one %s-old-<unix>", old, dataDir)
	}
	if after := listTree(t, old[0]); !maps.Equal(after, before) {
		t.Errorf("the old data moved aside changed:\n%v\nwas\n%v", after, before)
	}
	if !strings.Contains(logs.String(), old[0]) {
		t.Errorf("the log does not say where the old data went:\n%s", logs.String())
	}
	r := startEtcd(t, dataDir, "orch", peer)
	if got := all(t, r.client(t)); !maps.Equal(got, want) {
		t.Fatalf("restored keys = %v\nwant exactly %v", got, want)
	}
}

func TestRestoreRefusesBadSnapshots(t *testing.T) {
	_, _, snap, _ := seed(t, 3)
	ctx := context.Background()
	data, err := os.ReadFile(snap.Path)
	if err != nil {
		t.Fatal(err)
	}
	sumLine, _ := os.ReadFile(snap.Path + ".sha256")

	cases := []struct {
		name    string
		prepare func(t *testing.T, path string)
		want    string
		isSum   bool
	}{
		{"checksum mismatch", func(t *testing.T, path string) {
			writeFile(t, path, data)
			writeFile(t, path+".sha256", []byte(strings.Repeat("0", 64)+"  "+filepath.Base(path)+"\n"))
		}, "sha256", true},
		{"damaged snapshot", func(t *testing.T, path string) {
			bad := bytes.Clone(data)
			bad[len(bad)/2] ^= 0xff
			writeFile(t, path, bad)
			writeFile(t, path+".sha256", sumLine)
		}, "damaged", true},
		{"checksum file missing", func(t *testing.T, path string) {
			writeFile(t, path, data)
		}, "missing", true},
		{"checksum file garbage", func(t *testing.T, path string) {
			writeFile(t, path, data)
			writeFile(t, path+".sha256", []byte("hello\n"))
		}, "sha256sum format", true},
		{"not an etcd snapshot", func(t *testing.T, path string) {
			junk := bytes.Repeat([]byte("not a bbolt database "), 4096)
			junk = append(junk[:8*512], make([]byte, 32)...) // the right length for etcd's hash
			writeFile(t, path, junk)
			sum := sha256.Sum256(junk)
			writeFile(t, path+".sha256", fmt.Appendf(nil, "%x  %s\n", sum, filepath.Base(path)))
		}, "not a valid etcd snapshot", false},
		{"no etcd hash at the end", func(t *testing.T, path string) {
			short := data[:len(data)-32]
			writeFile(t, path, short)
			sum := sha256.Sum256(short)
			writeFile(t, path+".sha256", fmt.Appendf(nil, "%x  %s\n", sum, filepath.Base(path)))
		}, "etcd's own sha256", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), snap.Name)
			tc.prepare(t, path)
			parent := t.TempDir()
			target := filepath.Join(parent, "etcd")
			writeFile(t, filepath.Join(target, "member", "keep"), []byte("the live data"))
			before := listTree(t, parent)

			err := etcdsnapshot.Restore(ctx, path, target, "orch", "http://127.0.0.1:2380", quiet)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Restore: %v, want an error that says %q", err, tc.want)
			}
			if errors.Is(err, etcdsnapshot.ErrChecksum) != tc.isSum {
				t.Errorf("errors.Is(%v, ErrChecksum) = %v, want %v", err, !tc.isSum, tc.isSum)
			}
			if after := listTree(t, parent); !maps.Equal(after, before) {
				t.Errorf("a refused restore changed the target:\n%v\nwas\n%v", after, before)
			}
		})
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// listTree maps every file under root (relative path) to its sha256.
func listTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if info.IsDir() {
			out[rel+"/"] = "dir"
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return err
		}
		out[rel] = hex.EncodeToString(h.Sum(nil))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
