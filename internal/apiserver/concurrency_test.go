package apiserver_test

import (
	"fmt"
	"strconv"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestConcurrentWritersOnOneObject: 16 writers update one object with the
// resourceVersion they read. Every write either lands (and stays visible) or
// gets 409 Conflict; no successful write is lost.
func TestConcurrentWritersOnOneObject(t *testing.T) {
	ctx := testContext(t)
	_, client := newClient(t, "conc")
	cms := client.CoreV1().ConfigMaps("conc")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shared"}, Data: map[string]string{}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const writers, writesEach = 16, 10
	var mu sync.Mutex
	conflicts := 0
	lastWritten := map[string]int{} // writer → last value it wrote successfully
	versions := map[string]bool{}   // resourceVersions returned by successful updates
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("writer-%d", w)
			for n := 1; n <= writesEach; {
				cm, err := cms.Get(ctx, "shared", metav1.GetOptions{})
				if err != nil {
					t.Error(err)
					return
				}
				if cm.Data == nil {
					cm.Data = map[string]string{}
				}
				cm.Data[key] = strconv.Itoa(n)
				updated, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
				mu.Lock()
				switch {
				case apierrors.IsConflict(err):
					conflicts++
				case err != nil:
					t.Errorf("%s: unexpected error %v", key, err)
				default:
					if versions[updated.ResourceVersion] {
						t.Errorf("two successful updates returned resourceVersion %s", updated.ResourceVersion)
					}
					versions[updated.ResourceVersion] = true
					lastWritten[key] = n
					n++
				}
				mu.Unlock()
				if err != nil && !apierrors.IsConflict(err) {
					return
				}
			}
		}()
	}
	wg.Wait()
	final, err := cms.Get(ctx, "shared", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for w := 0; w < writers; w++ {
		key := fmt.Sprintf("writer-%d", w)
		if got, want := final.Data[key], strconv.Itoa(lastWritten[key]); got != want {
			t.Errorf("%s: final value %q, but its last successful write was %q (a write was lost)", key, got, want)
		}
	}
	if len(versions) != writers*writesEach {
		t.Errorf("%d successful updates, want %d", len(versions), writers*writesEach)
	}
	if conflicts == 0 {
		t.Errorf("16 concurrent writers never conflicted: stale resourceVersions are not being checked")
	}
	t.Logf("%d updates, %d conflicts", len(versions), conflicts)
}
