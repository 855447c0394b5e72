package localstore

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"orch/internal/envtest"
)

// crashChildEnv makes the test binary the writer TestKilledWhileWriting
// kills.
const crashChildEnv = "ORCH_LOCALSTORE_CRASH_DIR"

// TestKilledWhileWriting kills a process that writes to the store with
// SIGKILL, a hundred times at random moments: each time the store opens,
// bbolt's check finds nothing wrong, and what it holds reads back whole.
func TestKilledWhileWriting(t *testing.T) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir)
		return
	}
	dir := t.TempDir()
	for i := range 100 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKilledWhileWriting$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The child says when it has the store open and is writing.
		if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
			t.Fatalf("run %d: the writer did not start: %v", i, err)
		}
		time.Sleep(time.Duration(rand.IntN(40)) * time.Millisecond) // a random moment of its writing
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		checkStore(t, dir, i)
	}
}

// checkStore opens the store as the agent would after a crash.
func checkStore(t *testing.T, dir string, run int) {
	t.Helper()
	s, err := Open(dir, Options{Log: envtest.Logger()})
	if err != nil {
		t.Fatalf("run %d: the store does not open after a crash: %v", run, err)
	}
	defer s.Close()
	err = s.db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatalf("run %d: bbolt check: %v", run, err)
	}
	if body, ok, err := s.listBody(podsKey); err != nil {
		t.Fatalf("run %d: %v", run, err)
	} else if ok {
		var l listJSON
		if err := json.Unmarshal(body, &l); err != nil {
			t.Fatalf("run %d: the stored collection is not whole: %v", run, err)
		}
	}
	if _, _, err := s.object("/api/v1/namespaces/ns/secrets/s"); err != nil {
		t.Fatalf("run %d: the stored Secret does not open: %v", run, err)
	}
}

// crashChild writes lists, watch events and Secrets until it is killed.
func crashChild(dir string) {
	s, err := Open(dir, Options{Log: envtest.Logger(), GCInterval: time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("writing")
	for n := 1; ; n++ {
		rv := strconv.Itoa(n * 100)
		var pods []string
		for i := range 50 {
			pods = append(pods, podJSON(fmt.Sprintf("p%d", i), rv))
		}
		s.recordList(request{kind: list, key: podsKey}, podList(rv, pods...))
		for i := range 50 {
			erv := strconv.Itoa(n*100 + i + 1)
			s.apply(podsKey, event{name: fmt.Sprintf("ns/p%d", i), rv: erv, object: []byte(podJSON(fmt.Sprintf("p%d", i), erv))})
		}
		s.putObject("/api/v1/namespaces/ns/secrets/s", []byte(fmt.Sprintf(`{"kind":"Secret","data":{"n":"%d"}}`, n)), true)
		s.flush()
	}
}
