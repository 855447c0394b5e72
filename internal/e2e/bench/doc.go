// Package bench is the load driver behind `make bench`: it measures the real
// `orch server` binary as a user would meet it, and prints the figures that
// docs/benchmarks.md records.
//
// BenchmarkServer (bench_test.go) starts ORCH_BIN with a fresh temporary data
// directory on free loopback ports and measures:
//
//   - the time from process start to /readyz answering 200, over several fresh
//     starts and restarts on the same data directory;
//   - create, get, update and list (500 configmaps, whole and with limit=100
//     pagination) throughput and p50/p99 latency with 1, 16 and 64 concurrent
//     client-go clients over the admin kubeconfig (QPS limits off), in JSON and,
//     for create and get, protobuf; with ORCH_BENCH_AS=rbac the clients are
//     instead a user that RBAC authorizes (identity.go);
//   - watch: events per second delivered to 1, 16 and 64 watchers while a fixed
//     set of writers update configmaps, with the write-to-delivery latency;
//   - the same get, list, create, update and watch ("cr" rows, JSON) on a
//     custom resource: a namespaced CRD the driver makes before the phases
//     (widgets.go), driven through client-go's dynamic client;
//   - the server's resident memory (VmRSS, and RssAnon and RssFile apart) idle
//     after start, at its peak under load (sampled), and idle after the load.
//
// When KUBE_APISERVER_BIN and ETCD_BIN name upstream binaries (see
// build-peer.sh), the same workload also runs against kube-apiserver on its own
// etcd and the table gets a second column.
//
// Every loop is bounded in count and in time, all traffic stays on loopback,
// and nothing is asserted about speed: figures are printed, never checked.
package bench
