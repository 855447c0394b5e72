package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// killCycles is how many times TestKillNineUnderWrites kills the server.
const killCycles = 200

// ackLog is every write the server acknowledged (2xx), in order.
type ackLog struct {
	mu      sync.Mutex
	created []string // ConfigMaps created
	counter int      // the last acknowledged value of the counter ConfigMap
	maxRV   int64    // the highest resourceVersion acknowledged
}

func (l *ackLog) acked(name string, counter int, rv string) {
	v, _ := strconv.ParseInt(rv, 10, 64)
	l.mu.Lock()
	defer l.mu.Unlock()
	if name != "" {
		l.created = append(l.created, name)
	}
	if counter > l.counter {
		l.counter = counter
	}
	l.maxRV = max(l.maxRV, v)
}

// newCounter is the ConfigMap writeUntil counts up in.
func newCounter() *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "counter"}, Data: map[string]string{"value": "0"}}
}

// writeUntil creates ConfigMaps and bumps a counter ConfigMap until stop
// closes, logging each acknowledged write.
func writeUntil(client kubernetes.Interface, cycle int, log *ackLog, stop <-chan struct{}) {
	cms := client.CoreV1().ConfigMaps("default")
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		name := fmt.Sprintf("w-%d-%d", cycle, n)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"n": strconv.Itoa(n)}}
		if got, err := cms.Create(context.Background(), cm, metav1.CreateOptions{}); err == nil {
			log.acked(name, 0, got.ResourceVersion)
		}
		counter, err := cms.Get(context.Background(), "counter", metav1.GetOptions{})
		if err != nil {
			continue
		}
		value, _ := strconv.Atoi(counter.Data["value"])
		counter.Data["value"] = strconv.Itoa(value + 1)
		if got, err := cms.Update(context.Background(), counter, metav1.UpdateOptions{}); err == nil {
			log.acked("", value+1, got.ResourceVersion)
		}
	}
}

// TestKillNineUnderWrites kills one server (kill -9) 200 times while a
// client writes, restarts it each time, and checks that no acknowledged
// write was lost and that resourceVersion never went backwards.
func TestKillNineUnderWrites(t *testing.T) {
	s := StartServer(t)
	client := quickClient(t, s, 2*time.Second)
	if _, err := client.CoreV1().ConfigMaps("default").Create(context.Background(), newCounter(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	log := &ackLog{}
	for cycle := range killCycles {
		stop, done := make(chan struct{}), make(chan struct{})
		go func() { defer close(done); writeUntil(client, cycle, log, stop) }()
		time.Sleep(time.Duration(50+rand.IntN(250)) * time.Millisecond)
		s.Kill()
		close(stop)
		<-done
		s.Start()
		checkAcknowledged(t, client, log, cycle, false)
	}
	checkAcknowledged(t, client, log, killCycles, true)
	t.Logf("%d kills; %d creates and counter %d acknowledged; highest resourceVersion %d", killCycles, len(log.created), log.counter, log.maxRV)
	if len(log.created) < killCycles {
		t.Fatalf("only %d writes were acknowledged in %d cycles: the load did not load", len(log.created), killCycles)
	}
}

// checkAcknowledged fails if the server lost an acknowledged write: the
// counter is below the last acknowledged value, the list's
// resourceVersion is below the highest acknowledged one, or (with all) a
// created ConfigMap is missing; else only the last cycle's are checked.
func checkAcknowledged(t *testing.T, client kubernetes.Interface, log *ackLog, cycle int, all bool) {
	t.Helper()
	log.mu.Lock()
	defer log.mu.Unlock()
	cms := client.CoreV1().ConfigMaps("default")
	var list *corev1.ConfigMapList
	eventually(t, 30*time.Second, func() string {
		var err error
		if list, err = cms.List(context.Background(), metav1.ListOptions{}); err != nil {
			return "list ConfigMaps: " + err.Error()
		}
		return ""
	})
	rv, _ := strconv.ParseInt(list.ResourceVersion, 10, 64)
	if rv < log.maxRV {
		t.Fatalf("cycle %d: the list's resourceVersion %d is below the acknowledged %d", cycle, rv, log.maxRV)
	}
	have := map[string]corev1.ConfigMap{}
	for _, cm := range list.Items {
		have[cm.Name] = cm
	}
	if v, _ := strconv.Atoi(have["counter"].Data["value"]); v < log.counter {
		t.Fatalf("cycle %d: counter is %d, but %d was acknowledged", cycle, v, log.counter)
	}
	prefix := fmt.Sprintf("w-%d-", cycle)
	for _, name := range log.created {
		if !all && (len(name) < len(prefix) || name[:len(prefix)] != prefix) {
			continue
		}
		if _, ok := have[name]; !ok {
			_, err := cms.Get(context.Background(), name, metav1.GetOptions{})
			t.Fatalf("cycle %d: acknowledged ConfigMap %s is gone (get: %v, not found: %v)", cycle, name, err, apierrors.IsNotFound(err))
		}
	}
}
