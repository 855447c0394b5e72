package e2e

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"orch/internal/localstore"

	bolt "go.etcd.io/bbolt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// TestAgentKilledWhileWriting kills the whole agent with SIGKILL at random
// moments (10 times; ORCH_E2E_KILLS sets how many), while Services come
// and go and the agent records them and its pods in its local store. Each
// time the agent starts again on the same store. In the end bbolt's check
// finds nothing wrong in the store, and the agent brings its pods back
// from it after a "reboot" with no server.
func TestAgentKilledWhileWriting(t *testing.T) {
	kills := 10
	if v := os.Getenv("ORCH_E2E_KILLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("ORCH_E2E_KILLS: %v", err)
		}
		kills = n
	}
	s, a, client := startOfflineApp(t)

	db := filepath.Join(a.DataDir, "agent", localstore.DBFile)
	ctx, stop := context.WithCancel(context.Background())
	churned := make(chan int)
	go func() { churned <- churnServices(ctx, client) }()
	for i := range kills {
		waitWritten(t, db, a.started)
		time.Sleep(time.Duration(rand.IntN(1500)) * time.Millisecond) // a random moment of its writing
		a.Alive()
		a.Kill()
		a.Start()
		if i%10 == 9 {
			t.Logf("%d kills", i+1)
		}
	}
	waitWritten(t, db, a.started) // the last agent writes too
	stop()
	t.Logf("%d Services made and deleted meanwhile", <-churned)

	s.Stop()
	a.Stop()
	checkBolt(t, db)
	rebootOffline(t, a)
}

// churnServices makes and deletes Services until ctx ends and says how
// many it made.
func churnServices(ctx context.Context, client kubernetes.Interface) int {
	n := 0
	for ctx.Err() == nil {
		name := fmt.Sprintf("churn-%d", n%20)
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
		}
		if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err == nil {
			n++
		}
		client.CoreV1().Services("default").Delete(ctx, fmt.Sprintf("churn-%d", (n+10)%20), metav1.DeleteOptions{})
	}
	return n
}

// waitWritten waits until the file at path was written after since (the
// agent has reached the server and records what it reads).
func waitWritten(t *testing.T, path string, since time.Time) {
	t.Helper()
	eventually(t, time.Minute, func() string {
		if info, err := os.Stat(path); err != nil || !info.ModTime().After(since) {
			return fmt.Sprintf("the agent has not written %s since it started at %v", path, since)
		}
		return ""
	})
}

// checkBolt runs bbolt's consistency check on the database at path.
func checkBolt(t *testing.T, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second, ReadOnly: true})
	if err != nil {
		t.Fatalf("the store does not open: %v", err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		var first error
		for err := range tx.Check() { // read to the end: the checker stops then
			first = cmp.Or(first, err)
		}
		return first
	})
	if err != nil {
		t.Fatalf("bbolt check of %s: %v", path, err)
	}
}
