package proxy

import (
	"testing"

	"orch/internal/netnstest"
)

// The tests and benchmarks that touch the kernel's tables run in a private
// network namespace (netnstest).
func TestMain(m *testing.M) { netnstest.Main(m) }

var (
	requireNetns = netnstest.Require
	run          = netnstest.Run
	saveChains   = netnstest.SaveChains
	flushAll     = netnstest.FlushAll
)
