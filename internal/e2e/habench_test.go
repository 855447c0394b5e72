package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// BenchmarkHAFailover measures how long the API of three servers stays
// unwritable when the server of the etcd leader is killed (kill -9): from
// the kill to the first write acknowledged through one of the other two
// (clients give up on a request after 250 ms and try the other server).
// It kills the leader ORCH_BENCH_FAILOVERS times (default 5), bringing the
// server back each time. Run with -benchtime 1x (make bench).
func BenchmarkHAFailover(b *testing.B) {
	c := startHACluster(b, 84, false)
	etcd := c.etcdClient(b)
	runs := 5
	if n, err := strconv.Atoi(os.Getenv("ORCH_BENCH_FAILOVERS")); err == nil && n > 0 {
		runs = n
	}
	var times []time.Duration
	for run := range runs {
		waitVoters(b, etcd, 3)
		victim := c.leaderServer(b, etcd)
		survivors := c.clientsBut(b, victim, 250*time.Millisecond)
		killed := time.Now()
		c.servers[victim].Kill()
		d := firstWrite(b, survivors, killed, fmt.Sprintf("failover-%d", run))
		b.Logf("run %d: killed the leader's server %d; writable again after %v", run, victim, d.Round(time.Millisecond))
		times = append(times, d)
		c.servers[victim].Start()
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "failover-p50-ms")
	b.ReportMetric(float64(times[len(times)-1].Microseconds())/1000, "failover-max-ms")
}

// waitVoters waits until etcd has n voting members and no learner.
func waitVoters(t testing.TB, etcd *clientv3.Client, n int) {
	t.Helper()
	eventually(t, 2*time.Minute, func() string {
		voters, learners, err := members(etcd)
		if err != nil || voters != n || learners != 0 {
			return fmt.Sprintf("etcd members: %d voters, %d learners, %v; want %d voters", voters, learners, err, n)
		}
		return ""
	})
}

// leaderServer is the index of the server whose etcd member leads.
func (c *haCluster) leaderServer(t testing.TB, etcd *clientv3.Client) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := etcd.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, endpoint := range etcd.Endpoints() {
		status, err := etcd.Status(ctx, endpoint)
		if err != nil {
			continue
		}
		for _, m := range list.Members {
			if m.ID != status.Leader {
				continue
			}
			for i := range c.servers {
				if strings.HasPrefix(m.Name, fmt.Sprintf("ha-%d-", i)) {
					return i
				}
			}
		}
	}
	t.Fatal("no etcd member says who leads")
	return 0
}
