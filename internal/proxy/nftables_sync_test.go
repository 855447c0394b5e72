package proxy

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"orch/internal/goldentest"

	"sigs.k8s.io/knftables"
)

// sortedDump is fake's dump with its lines sorted: a set's elements are
// in no order in the kernel, and the fake dumps them as they came.
func sortedDump(fake *knftables.Fake) string {
	lines := strings.Split(fake.Dump(), "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// freshDump is the sorted dump of a table written whole with st.
func freshDump(t *testing.T, st *NFTState) string {
	t.Helper()
	fake := knftables.NewFake(knftables.IPv4Family, nftTable)
	tx := fake.NewTransaction()
	nftFullTx(tx, st, nil)
	if err := fake.Run(context.Background(), tx); err != nil {
		t.Fatal(err)
	}
	return sortedDump(fake)
}

// TestNFTSync: after every partial sync the table is what a full write of
// the same state gives; a sync with nothing to change runs nothing; a
// change writes a few operations; chains of a removed service are flushed
// and deleted a second later; a full sync finds a chain a crash left.
func TestNFTSync(t *testing.T) {
	ctx := context.Background()
	fake := knftables.NewFake(knftables.IPv4Family, nftTable)
	s := newNFTSyncer(fake, time.Hour)
	t0 := time.Unix(1e9, 0)
	sync := func(at time.Duration, in Input) nftResult {
		t.Helper()
		res, err := s.sync(ctx, t0.Add(at), NFTBuild(in))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	same := func(what string, in Input) {
		t.Helper()
		if got, want := sortedDump(fake), freshDump(t, NFTBuild(in)); got != want {
			t.Errorf("%s: the table differs from a full write of the same input:\n%s", what, goldentest.LineDiff(want, got))
		}
	}

	base := loadInput(t, "upstream-overall")
	if res := sync(0, base); !res.Full {
		t.Errorf("first sync: %+v, want full", res)
	}
	same("first sync", base)
	if res := sync(time.Second, base); res.Full || res.Operations != 0 {
		t.Errorf("unchanged: %+v, want a partial sync of no operation", res)
	}

	moved := loadInput(t, "upstream-overall")
	moved.Slices[0].Endpoints[0].Addresses = []string{"10.180.9.9"}
	res := sync(2*time.Second, moved)
	if res.Full || res.Operations == 0 || res.Operations > 12 {
		t.Errorf("an endpoint moved: %+v, want a partial sync of a few operations", res)
	}
	same("an endpoint moved", moved)

	fewer := moved
	fewer.Services = moved.Services[1:]
	sync(3*time.Second, fewer)
	if res := sync(5*time.Second, fewer); res.ChainsDeleted == 0 {
		t.Errorf("two seconds after a service went: %+v, want its chains deleted", res)
	}
	same("a service removed", fewer)
	if res := sync(5500*time.Millisecond, moved); res.Full || res.Operations == 0 {
		t.Errorf("a service added: %+v, want a partial sync", res)
	}
	same("a service added", moved)
	sync(6*time.Second, fewer)
	sync(7500*time.Millisecond, fewer)

	// A chain a crash left behind: a full sync flushes it, the next deletes it.
	tx := fake.NewTransaction()
	tx.Add(&knftables.Chain{Name: "service-AAAAAAAA-gone/svc/tcp/"})
	tx.Add(&knftables.Rule{Chain: "service-AAAAAAAA-gone/svc/tcp/", Rule: "drop"})
	if err := fake.Run(ctx, tx); err != nil {
		t.Fatal(err)
	}
	s.needFull = true
	sync(8*time.Second, fewer)
	sync(10*time.Second, fewer)
	same("after a full sync found a leftover chain", fewer)
}

// TestNFTSyncAffinity: affinity sets come and go with their endpoints.
func TestNFTSyncAffinity(t *testing.T) {
	ctx := context.Background()
	fake := knftables.NewFake(knftables.IPv4Family, nftTable)
	s := newNFTSyncer(fake, time.Hour)
	in := loadInput(t, "affinity")
	t0 := time.Unix(1e9, 0)
	if _, err := s.sync(ctx, t0, NFTBuild(in)); err != nil {
		t.Fatal(err)
	}
	// A new timeout is in the endpoints' rules, which a partial sync writes.
	longer := loadInput(t, "affinity")
	for _, svc := range longer.Services {
		if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
			*c.ClientIP.TimeoutSeconds += 100
		}
	}
	if res, err := s.sync(ctx, t0.Add(500*time.Millisecond), NFTBuild(longer)); err != nil || res.Full || res.Operations == 0 {
		t.Fatalf("a new affinity timeout: %+v, %v; want a partial sync that writes it", res, err)
	}
	if got, want := sortedDump(fake), freshDump(t, NFTBuild(longer)); got != want {
		t.Errorf("with a new affinity timeout, the table differs from a full write:\n%s", goldentest.LineDiff(want, got))
	}
	none := in
	none.Slices = nil
	for i, at := range []time.Duration{time.Second, 3 * time.Second} {
		if _, err := s.sync(ctx, t0.Add(at), NFTBuild(none)); err != nil {
			t.Fatalf("sync %d without endpoints: %v", i, err)
		}
	}
	if got, want := sortedDump(fake), freshDump(t, NFTBuild(none)); got != want {
		t.Errorf("without endpoints, the table differs from a full write:\n%s", goldentest.LineDiff(want, got))
	}
}

// TestNFTSyncAfterTableLoss: chains waiting to be deleted when the table
// goes (nft flush ruleset) make one full sync, not one every second.
func TestNFTSyncAfterTableLoss(t *testing.T) {
	ctx := context.Background()
	fake := knftables.NewFake(knftables.IPv4Family, nftTable)
	s := newNFTSyncer(fake, time.Hour)
	in := loadInput(t, "upstream-overall")
	fewer := in
	fewer.Services = in.Services[1:]
	t0 := time.Unix(1e9, 0)
	for i, st := range []*NFTState{NFTBuild(in), NFTBuild(fewer)} {
		if _, err := s.sync(ctx, t0.Add(time.Duration(i)*time.Second), st); err != nil {
			t.Fatal(err)
		}
	}
	tx := fake.NewTransaction()
	tx.Delete(&knftables.Table{})
	if err := fake.Run(ctx, tx); err != nil {
		t.Fatal(err)
	}
	var fulls []bool
	for i := range 4 {
		res, err := s.sync(ctx, t0.Add(time.Duration(3+2*i)*time.Second), NFTBuild(fewer))
		if err != nil {
			t.Fatal(err)
		}
		fulls = append(fulls, res.Full)
	}
	if !slices.Equal(fulls, []bool{true, false, false, false}) {
		t.Errorf("syncs after the table went were full: %v; want one full sync, then partial ones", fulls)
	}
	if got, want := sortedDump(fake), freshDump(t, NFTBuild(fewer)); got != want {
		t.Errorf("after the table came back, it differs from a full write:\n%s", goldentest.LineDiff(want, got))
	}
}
