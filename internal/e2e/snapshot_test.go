package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSnapshotRestoreOnNewHost snapshots etcd while a client writes,
// restores the snapshot into a fresh data dir given only the token, and
// checks that every write acknowledged before the snapshot is there.
func TestSnapshotRestoreOnNewHost(t *testing.T) {
	s := StartServer(t)
	token := s.Token()
	client := quickClient(t, s, 2*time.Second)
	if _, err := client.CoreV1().ConfigMaps("default").Create(context.Background(), newCounter(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	log := &ackLog{}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { defer close(done); writeUntil(client, 0, log, stop) }()
	time.Sleep(time.Second)

	log.mu.Lock()
	before, counterBefore := slices.Clone(log.created), log.counter
	log.mu.Unlock()
	out, err := exec.Command(orchBin, "etcd-snapshot", "save", "--data-dir", s.Dir, "--node-name", "e2e",
		"--etcd-endpoint", "http://127.0.0.1:"+strconv.Itoa(s.etcdPorts[0])).CombinedOutput()
	if err != nil {
		t.Fatalf("orch etcd-snapshot save: %v\n%s", err, out)
	}
	time.Sleep(500 * time.Millisecond) // writes after the snapshot may or may not be in it
	close(stop)
	<-done
	path := regexp.MustCompile(`saved (\S+\.db)`).FindStringSubmatch(string(out))
	if path == nil || len(before) == 0 {
		t.Fatalf("no snapshot path in %q, or no write before it (%d)", out, len(before))
	}
	s.Stop()

	fresh := t.TempDir()
	restore := exec.Command(orchBin, "server", "--data-dir", fresh, "--cluster-reset", "--cluster-reset-restore-path", path[1], "--token", token,
		"--write-kubeconfig", filepath.Join(fresh, "unused.yaml"), "--disable-agent")
	if out, err := restore.CombinedOutput(); err != nil || !strings.Contains(string(out), "restored the etcd snapshot") {
		t.Fatalf("orch server --cluster-reset: %v\n%s", err, out)
	}
	restored := &Server{t: t, Dir: fresh, Kubeconfig: filepath.Join(fresh, "kubeconfig.yaml"), bindAddress: "127.0.0.1", host: "127.0.0.1"}
	restored.pickPorts()
	restored.stopWhenDone(false)
	restored.Start()
	if got := restored.Token(); got != token {
		t.Fatalf("the restored server's token is %q, want the cluster's %q", got, token)
	}
	cms := restored.client(t).CoreV1().ConfigMaps("default")
	for _, name := range before {
		if _, err := cms.Get(context.Background(), name, metav1.GetOptions{}); err != nil {
			t.Fatalf("ConfigMap %s, acknowledged before the snapshot, is not in the restored cluster: %v", name, err)
		}
	}
	counter, err := cms.Get(context.Background(), "counter", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := strconv.Atoi(counter.Data["value"]); v < counterBefore {
		t.Fatalf("restored counter %d < %d acknowledged before the snapshot", v, counterBefore)
	}
	t.Logf("%d ConfigMaps and counter %d acknowledged before the snapshot are all restored", len(before), counterBefore)

	if out, err := exec.Command(orchBin, "etcd-snapshot", "ls", "--data-dir", s.Dir).CombinedOutput(); err != nil || !strings.Contains(string(out), filepath.Base(path[1])) {
		t.Fatalf("orch etcd-snapshot ls: %v\n%s", err, out)
	}
	if err := os.WriteFile(path[1], []byte("tampered"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(orchBin, "server", "--data-dir", t.TempDir(), "--cluster-reset", "--cluster-reset-restore-path", path[1], "--token", token, "--disable-agent").CombinedOutput()
	if err == nil || !strings.Contains(strings.ToLower(string(out)), "checksum") {
		t.Fatalf("a tampered snapshot was restored or refused for another reason: %v\n%s", err, out)
	}
}
