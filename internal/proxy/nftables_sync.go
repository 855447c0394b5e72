package proxy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/knftables"
)

// staleChainDelay is how long a flushed chain waits to be deleted: until
// kernel 6.2 a chain a map element pointed to stays busy for a moment
// after the element goes (upstream waits the same).
const staleChainDelay = time.Second

// nftSyncer keeps the nftables mode's table in step with NFTStates. A full
// sync rewrites everything (and finds chains a crash left behind); a
// partial one writes the chains whose rules changed and the elements that
// differ, so a sync with nothing to change runs no command. Chains no
// longer wanted are flushed, and deleted in a later sync. It is not safe
// for concurrent use.
type nftSyncer struct {
	nft            knftables.Interface
	fullSyncPeriod time.Duration

	prev     *NFTState // nil until the first successful sync
	needFull bool
	lastFull time.Time
	stale    map[string]time.Time // flushed chain → when
}

func newNFTSyncer(nft knftables.Interface, fullSyncPeriod time.Duration) *nftSyncer {
	return &nftSyncer{nft: nft, fullSyncPeriod: fullSyncPeriod, stale: map[string]time.Time{}}
}

// nftResult describes one sync.
type nftResult struct {
	Full          bool
	Operations    int // in the main transaction
	ChainsDeleted int
}

// sync writes st.
func (s *nftSyncer) sync(ctx context.Context, now time.Time, st *NFTState) (nftResult, error) {
	res := nftResult{Full: s.prev == nil || s.needFull || now.Sub(s.lastFull) >= s.fullSyncPeriod}
	if n, err := s.deleteStale(ctx, now, st); err != nil {
		res.Full = true // the chains are found again and flushed
	} else {
		res.ChainsDeleted = n
	}
	s.needFull = true // until this sync succeeds
	tx := s.nft.NewTransaction()
	if res.Full {
		existing, err := s.nft.List(ctx, "chains")
		if err != nil && !knftables.IsNotFound(err) {
			return res, fmt.Errorf("proxy: list the nftables chains: %w", err)
		}
		sets, err := s.nft.List(ctx, "sets")
		if err != nil && !knftables.IsNotFound(err) {
			return res, fmt.Errorf("proxy: list the nftables sets: %w", err)
		}
		have := map[string]bool{}
		for _, name := range existing {
			have[name] = true
		}
		nftFullTx(tx, st, have)
		s.flushStale(tx, now, st, existing)
		for _, name := range sets {
			if _, ok := st.Affinity[name]; !ok && strings.HasPrefix(name, "affinity-") {
				tx.Delete(&knftables.Set{Name: name})
			}
		}
	} else {
		s.partialTx(tx, now, st)
	}
	res.Operations = tx.NumOperations()
	if res.Operations > 0 {
		if err := s.nft.Run(ctx, tx); err != nil {
			clear(s.stale) // its flushes did not happen
			return res, fmt.Errorf("proxy: nft: %w", err)
		}
	}
	s.prev, s.needFull = st, false
	if res.Full {
		s.lastFull = now
	}
	return res, nil
}

// deleteStale deletes, in a transaction of its own, the chains flushed at
// least staleChainDelay ago that st does not want back.
func (s *nftSyncer) deleteStale(ctx context.Context, now time.Time, st *NFTState) (int, error) {
	tx := s.nft.NewTransaction()
	var gone []string
	for name, when := range s.stale {
		if _, back := st.Chains[name]; back {
			delete(s.stale, name)
			continue
		}
		if now.Sub(when) >= staleChainDelay {
			tx.Delete(&knftables.Chain{Name: name})
			gone = append(gone, name)
		}
	}
	if len(gone) == 0 {
		return 0, nil
	}
	// Forgotten whatever happens: when the delete fails (a chain still
	// busy, or gone with the table), the full sync that follows finds
	// those that still exist and flushes them again.
	for _, name := range gone {
		delete(s.stale, name)
	}
	if err := s.nft.Run(ctx, tx); err != nil {
		return 0, fmt.Errorf("proxy: delete stale nftables chains: %w", err)
	}
	return len(gone), nil
}

// flushStale flushes the per-service chains among names that st does not
// want (a per-service chain's name has a "/", no fixed one does).
func (s *nftSyncer) flushStale(tx *knftables.Transaction, now time.Time, st *NFTState, names []string) {
	for _, name := range names {
		if _, want := st.Chains[name]; want || !strings.Contains(name, "/") {
			continue
		}
		if _, already := s.stale[name]; !already {
			tx.Flush(&knftables.Chain{Name: name})
			s.stale[name] = now
		}
	}
}

// partialTx writes into tx what differs between s.prev and st.
func (s *nftSyncer) partialTx(tx *knftables.Transaction, now time.Time, st *NFTState) {
	for _, name := range sortedKeys(st.Affinity) {
		if _, ok := s.prev.Affinity[name]; !ok {
			tx.Add(affinitySet(name, st.IPv6))
		}
	}
	var changed []string
	for _, name := range sortedKeys(st.Chains) {
		if old, ok := s.prev.Chains[name]; ok && slices.Equal(old, st.Chains[name]) {
			continue
		}
		tx.Add(&knftables.Chain{Name: name})
		tx.Flush(&knftables.Chain{Name: name})
		changed = append(changed, name)
	}
	for _, name := range changed {
		for _, r := range st.Chains[name] {
			tx.Add(&knftables.Rule{Chain: name, Rule: r})
		}
	}
	for _, set := range nftSets(st.IPv6) {
		prev, cur := s.prev.Elements[set.name], st.Elements[set.name]
		elem := func(key, value string) *knftables.Element {
			e := &knftables.Element{Key: strings.Split(key, " . ")}
			if set.isMap {
				e.Map, e.Value = set.name, []string{value}
			} else {
				e.Set = set.name
			}
			return e
		}
		for _, k := range sortedKeys(prev) {
			if v, ok := cur[k]; !ok || v != prev[k] {
				tx.Delete(elem(k, ""))
			}
		}
		for _, k := range sortedKeys(cur) {
			if v, ok := prev[k]; !ok || v != cur[k] {
				tx.Add(elem(k, cur[k]))
			}
		}
	}
	for _, name := range sortedKeys(st.FixedRules) {
		if !slices.Equal(s.prev.FixedRules[name], st.FixedRules[name]) {
			tx.Flush(&knftables.Chain{Name: name})
			for _, r := range st.FixedRules[name] {
				tx.Add(&knftables.Rule{Chain: name, Rule: r})
			}
		}
	}
	var gone []string
	for name := range s.prev.Chains {
		gone = append(gone, name)
	}
	slices.Sort(gone)
	s.flushStale(tx, now, st, gone)
	for _, name := range sortedKeys(s.prev.Affinity) {
		if _, ok := st.Affinity[name]; !ok {
			tx.Delete(&knftables.Set{Name: name})
		}
	}
}

// nftMode is the Proxier's syncer of one IP family in nftables mode: an
// nftSyncer of that family's table and the Input's NFTState, with the UDP
// conntrack clean-up of iptables mode.
type nftMode struct {
	s        *nftSyncer
	udp      udpCleaner
	checkDue bool
}

var _ modeSyncer = (*nftMode)(nil)

// periodic has the next sync check that the table is still there (a
// `nft flush ruleset` removes it): when it is not, that sync is full.
func (m *nftMode) periodic() { m.checkDue = true }

func (m *nftMode) sync(now time.Time, in Input) (syncResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if m.checkDue {
		if _, err := m.s.nft.List(ctx, "chains"); knftables.IsNotFound(err) {
			m.s.needFull = true
			clear(m.s.stale) // gone with the table
		}
		m.checkDue = false
	}
	st := NFTBuild(in)
	r, err := m.s.sync(ctx, now, st)
	res := syncResult{Full: r.Full, ServicePorts: st.ServicePorts, Endpoints: st.Endpoints, Rules: r.Operations, ChainsDeleted: r.ChainsDeleted}
	if err != nil {
		return res, err
	}
	if len(m.s.stale) > 0 {
		res.Again = staleChainDelay + 100*time.Millisecond
	}
	n, err := m.udp.synced(st.UDP)
	res.ConntrackDeleted = n
	return res, err
}
