package proxy

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/knftables"

	"orch/internal/goldentest"
)

// TestNFTBuildGolden writes each testdata input's nftables state into
// knftables' fake (which refuses a goto to a missing chain or a missing
// @set) and compares its dump with testdata/<name>.nft.golden.
func TestNFTBuildGolden(t *testing.T) {
	for _, name := range []string{"affinity", "clusterip", "external-ips", "external-local", "internal-local", "loadbalancer",
		"no-endpoints", "nodeport", "protocols", "skipped", "terminating", "upstream-overall"} {
		t.Run(name, func(t *testing.T) {
			fake := knftables.NewFake(knftables.IPv4Family, nftTable)
			tx := fake.NewTransaction()
			nftFullTx(tx, NFTBuild(loadInput(t, name)), nil)
			if err := fake.Run(context.Background(), tx); err != nil {
				t.Fatalf("the fake refused the transaction: %v", err)
			}
			goldentest.Check(t, filepath.Join("testdata", name+".nft.golden"), []byte(fake.Dump()))
		})
	}
}

// TestNFTBuild checks what the clusterip and no-endpoints inputs mean.
func TestNFTBuild(t *testing.T) {
	st := NFTBuild(loadInput(t, "clusterip"))
	var web string
	for k, v := range st.Elements[nftServiceIPs] {
		if strings.HasSuffix(v, "-default/web/tcp/http") {
			web = k
		}
	}
	if web == "" {
		t.Fatalf("no service-ips element for default/web:http: %v", st.Elements[nftServiceIPs])
	}
	chain := st.Elements[nftServiceIPs][web][len("goto "):]
	want := []string{
		"numgen random mod 3 == 0 meta l4proto tcp dnat to 10.42.1.5:8080",
		"numgen random mod 2 == 0 meta l4proto tcp dnat to 10.42.2.7:8080",
		"meta l4proto tcp dnat to 10.42.3.3:8080",
	}
	if r := st.Chains[chain]; !slices.Equal(r, want) {
		t.Errorf("%s: %q, want each of the three endpoints picked with probability 1/3:\n%q", chain, r, want)
	}
	none := NFTBuild(loadInput(t, "no-endpoints"))
	for k, v := range none.Elements[nftNoEndpointSvcs] {
		if v != "goto "+nftRejectChain {
			t.Errorf("no-endpoint-services %s: %q, want a goto to the reject chain", k, v)
		}
	}
	if len(none.Elements[nftNoEndpointSvcs]) == 0 {
		t.Error("a service without endpoints has no no-endpoint-services element")
	}
}

// TestNFTKernel has the real nft (in the private network namespace) check
// the tables of a few inputs, then writes the upstream-overall input's
// table and reads it back.
func TestNFTKernel(t *testing.T) {
	requireNetns(t)
	nft, err := knftables.New(knftables.IPv4Family, nftTable)
	if err != nil {
		t.Skipf("nft is not usable here (Debian: apt-get install nftables): %v", err)
	}
	for _, name := range []string{"affinity", "loadbalancer", "external-local"} {
		tx := nft.NewTransaction()
		nftFullTx(tx, NFTBuild(loadInput(t, name)), nil)
		tx.Delete(&knftables.Table{})
		if err := nft.Run(context.Background(), tx); err != nil {
			t.Fatalf("nft refused the table of %s: %v", name, err)
		}
	}
	st := NFTBuild(loadInput(t, "upstream-overall"))
	tx := nft.NewTransaction()
	nftFullTx(tx, st, nil)
	if err := nft.Run(context.Background(), tx); err != nil {
		t.Fatalf("nft refused the table: %v", err)
	}
	chains, err := nft.List(context.Background(), "chains")
	if err != nil {
		t.Fatal(err)
	}
	for name := range st.Chains {
		found := false
		for _, c := range chains {
			found = found || c == name
		}
		if !found {
			t.Errorf("chain %s not in the kernel's table", name)
		}
	}
	elems, err := nft.ListElements(context.Background(), "map", nftServiceIPs)
	if err != nil || len(elems) != len(st.Elements[nftServiceIPs]) {
		t.Errorf("service-ips in the kernel: %d elements (%v), want %d", len(elems), err, len(st.Elements[nftServiceIPs]))
	}
	tx = nft.NewTransaction()
	tx.Delete(&knftables.Table{})
	if err := nft.Run(context.Background(), tx); err != nil {
		t.Fatal(err)
	}
}
