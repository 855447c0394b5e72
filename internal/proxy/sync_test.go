package proxy

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
)

// fakeWriter records what a sync asks of iptables.
type fakeWriter struct {
	mu        sync.Mutex
	jumps     int
	restores  []string
	existing  []string
	failNext  error
	restoreCh chan string // when set, every restore is sent here
	lostJumps bool        // the next EnsureJumps finds a jump missing
}

func (f *fakeWriter) EnsureJumps() (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.jumps++
	lost := f.lostJumps
	f.lostJumps = false
	return lost, nil
}

func (f *fakeWriter) Restore(data []byte) error {
	f.mu.Lock()
	err := f.failNext
	f.failNext = nil
	if err == nil {
		f.restores = append(f.restores, string(data))
	}
	ch := f.restoreCh
	f.mu.Unlock()
	if err == nil && ch != nil {
		ch <- string(data)
	}
	return err
}

func (f *fakeWriter) Chains(string) ([]string, error) { return f.existing, nil }

type fakeConntrack struct {
	filters []netlink.CustomConntrackFilter
}

func (f *fakeConntrack) DeleteFlows(fl netlink.CustomConntrackFilter) (uint, error) {
	f.filters = append(f.filters, fl)
	return 1, nil
}

func TestSyncerFullAndPartial(t *testing.T) {
	w := &fakeWriter{existing: []string{"KUBE-SVC-STALESTALESTALE1"}}
	ct := &fakeConntrack{}
	s := newSyncer(w, ct, time.Hour)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	in := loadInput(t, "protocols")

	res, err := s.sync(t0, in)
	if err != nil || !res.Full || w.jumps != 1 {
		t.Fatalf("first sync: %+v, %v, jumps %d; want a full sync with jumps", res, err, w.jumps)
	}
	if res.ChainsDeleted != 1 || !strings.Contains(w.restores[0], "-X KUBE-SVC-STALESTALESTALE1") {
		t.Errorf("first sync did not delete the stale chain found by iptables-save")
	}
	if len(ct.filters) != 1 {
		t.Errorf("first sync: %d conntrack cleanups, want 1 (UDP frontends with endpoints)", len(ct.filters))
	}

	res, err = s.sync(t0.Add(time.Minute), in)
	if err != nil || res.Full || res.ChainsWritten != 0 || w.jumps != 1 || len(w.restores) != 1 {
		t.Errorf("unchanged sync: %+v, %v, jumps %d, restores %d; want partial, no restore", res, err, w.jumps, len(w.restores))
	}
	if len(ct.filters) != 1 {
		t.Errorf("unchanged sync cleaned conntrack")
	}

	s.JumpsDue = true // as on a SyncPeriod tick
	if res, err := s.sync(t0.Add(90*time.Second), in); err != nil || res.Full || w.jumps != 2 {
		t.Errorf("periodic sync: %+v, %v, jumps %d; want partial with the jumps checked", res, err, w.jumps)
	}

	s.JumpsDue, w.lostJumps = true, true // a firewall reload flushed the tables
	if res, err := s.sync(t0.Add(100*time.Second), in); err != nil || !res.Full || len(w.restores) != 2 {
		t.Errorf("sync after a jump was put back: %+v, %v, restores %d; want a full one", res, err, len(w.restores))
	}

	changed := loadInput(t, "protocols")
	changed.Slices[0].Endpoints[0].Addresses = []string{"10.42.1.3"}
	res, err = s.sync(t0.Add(2*time.Minute), changed)
	if err != nil || res.Full || res.ChainsWritten == 0 {
		t.Errorf("changed sync: %+v, %v", res, err)
	}
	if len(ct.filters) != 2 {
		t.Errorf("UDP endpoint change: %d conntrack cleanups, want 2", len(ct.filters))
	}

	w.failNext = errors.New("boom")
	if _, err := s.sync(t0.Add(3*time.Minute), in); err == nil {
		t.Fatal("restore error not returned")
	}
	res, err = s.sync(t0.Add(4*time.Minute), changed)
	if err != nil || !res.Full || w.jumps != 4 {
		t.Errorf("sync after an error: %+v, %v, jumps %d; want full", res, err, w.jumps)
	}

	res, err = s.sync(t0.Add(5*time.Minute+time.Hour), changed)
	if err != nil || !res.Full {
		t.Errorf("sync after the full-sync period: %+v, %v; want full", res, err)
	}
}
