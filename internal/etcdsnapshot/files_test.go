package etcdsnapshot_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"orch/internal/etcdsnapshot"
)

func touch(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, name := range names {
		writeFile(t, filepath.Join(dir, name), []byte(name))
	}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	list, err := etcdsnapshot.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range list {
		out = append(out, s.Name)
	}
	return out
}

func TestListSortsOldestFirst(t *testing.T) {
	dir := t.TempDir()
	touch(t, dir,
		"etcd-snapshot-b-300.db", "etcd-snapshot-a-100.db", "manual-a-200.db", "etcd-snapshot-a-300.db",
		"etcd-snapshot-a-300.db.sha256", "etcd-snapshot-a-100.db.sha256", ".etcd-snapshot-a-400.db.part-1", "notes.txt")
	writeFile(t, filepath.Join(dir, "etcd-snapshot-a-300.db.sha256"), []byte(strings.Repeat("ab", 32)+"  etcd-snapshot-a-300.db\n"))
	if err := os.Mkdir(filepath.Join(dir, "dir.db"), 0o700); err != nil {
		t.Fatal(err)
	}
	// A file whose name carries no time is placed by its mtime.
	touch(t, dir, "copied.db")
	if err := os.Chtimes(filepath.Join(dir, "copied.db"), time.Unix(250, 0), time.Unix(250, 0)); err != nil {
		t.Fatal(err)
	}

	list, err := etcdsnapshot.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range list {
		got = append(got, s.Name)
	}
	want := []string{"etcd-snapshot-a-100.db", "manual-a-200.db", "copied.db", "etcd-snapshot-a-300.db", "etcd-snapshot-b-300.db"}
	if !slices.Equal(got, want) {
		t.Fatalf("List = %v, want %v", got, want)
	}
	s := list[3]
	if s.Path != filepath.Join(dir, s.Name) || s.Size != int64(len(s.Name)) || !s.CreatedAt.Equal(time.Unix(300, 0)) || s.SHA256 != strings.Repeat("ab", 32) {
		t.Errorf("List[3] = %+v", s)
	}
	if list[0].SHA256 != "" {
		t.Errorf("a snapshot with a malformed .sha256 lists digest %q, want none", list[0].SHA256)
	}
}

func TestListOfMissingDirIsEmpty(t *testing.T) {
	list, err := etcdsnapshot.List(filepath.Join(t.TempDir(), "none"))
	if err != nil || len(list) != 0 {
		t.Fatalf("List = %v, %v; want nothing and no error", list, err)
	}
}

func TestDelete(t *testing.T) {
	dir := t.TempDir()
	touch(t, dir, "s-n-1.db", "s-n-1.db.sha256", "s-n-2.db", "s-n-2.db.sha256", "s-n-3.db")

	err := etcdsnapshot.Delete(dir, "s-n-1.db", "nope-n-9.db", "../s-n-2.db")
	if err == nil || !strings.Contains(err.Error(), `"nope-n-9.db"`) || !strings.Contains(err.Error(), `"../s-n-2.db"`) {
		t.Fatalf("Delete of unknown names: %v, want an error naming them", err)
	}
	if got := names(t, dir); len(got) != 3 {
		t.Fatalf("a failed Delete removed snapshots: left %v", got)
	}

	if err := etcdsnapshot.Delete(dir, "s-n-1.db", "s-n-3"); err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	if want := []string{filepath.Join(dir, "s-n-2.db"), filepath.Join(dir, "s-n-2.db.sha256")}; !slices.Equal(left, want) {
		t.Fatalf("after Delete: %v, want %v", left, want)
	}
	if err := etcdsnapshot.Delete(dir); err == nil {
		t.Error("Delete of no names succeeded")
	}
}

func TestPruneKeepsNewest(t *testing.T) {
	dir := t.TempDir()
	touch(t, dir,
		"etcd-snapshot-n1-500.db", "etcd-snapshot-n1-100.db", "etcd-snapshot-n1-400.db.sha256", "etcd-snapshot-n1-400.db",
		"etcd-snapshot-n1-200.db", "etcd-snapshot-n1-200.db.sha256", "etcd-snapshot-n2-50.db", "other-n1-10.db", "etcd-snapshot-n10-1.db")

	pruned, err := etcdsnapshot.Prune(dir, "etcd-snapshot-n1", 2)
	if err != nil {
		t.Fatal(err)
	}
	var gone []string
	for _, s := range pruned {
		gone = append(gone, s.Name)
	}
	if want := []string{"etcd-snapshot-n1-100.db", "etcd-snapshot-n1-200.db"}; !slices.Equal(gone, want) {
		t.Errorf("pruned %v, want %v", gone, want)
	}
	want := []string{"etcd-snapshot-n10-1.db", "other-n1-10.db", "etcd-snapshot-n2-50.db", "etcd-snapshot-n1-400.db", "etcd-snapshot-n1-500.db"}
	if got := names(t, dir); !slices.Equal(got, want) {
		t.Errorf("left %v, want %v", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "etcd-snapshot-n1-200.db.sha256")); !os.IsNotExist(err) {
		t.Errorf("the checksum of a pruned snapshot is still there (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "etcd-snapshot-n1-400.db.sha256")); err != nil {
		t.Errorf("the checksum of a kept snapshot: %v", err)
	}

	// Fewer than retain: nothing goes.
	if pruned, err := etcdsnapshot.Prune(dir, "etcd-snapshot", 10); err != nil || len(pruned) != 0 {
		t.Errorf("Prune with room to spare = %v, %v", pruned, err)
	}
	if _, err := etcdsnapshot.Prune(dir, "etcd-snapshot", -1); err == nil {
		t.Error("Prune with a negative retention succeeded")
	}
}
