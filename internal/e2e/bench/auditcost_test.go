package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// auditedUser is the admin-equivalent user (group system:masters) whose
// requests BenchmarkAuditCost's policy audits.
const auditedUser = "bench-audited"

// BenchmarkAuditCost measures what the audit log costs over HTTPS on one
// orch server started with --audit-policy-file and --audit-log-path: the
// workloads of BenchmarkAuthorizationCost, interleaved the same way, as
// the admin (whose requests the policy leaves out: level None) and as
// bench-audited, also in system:masters, whose every request is logged at
// ORCH_BENCH_AUDIT_LEVEL (Metadata by default; Request or RequestResponse
// log the objects too) to a file on the same disk.
func BenchmarkAuditCost(b *testing.B) {
	level := os.Getenv("ORCH_BENCH_AUDIT_LEVEL")
	if level == "" {
		level = "Metadata"
	}
	dir := b.TempDir()
	policy, log := filepath.Join(dir, "audit-policy.yaml"), filepath.Join(dir, "audit.log")
	rules := fmt.Sprintf("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: %s\n  users: [%s]\n- level: None\n", level, auditedUser)
	if err := os.WriteFile(policy, []byte(rules), 0o600); err != nil {
		b.Fatal(err)
	}
	t := startOrch(b, fmt.Sprintf("audit-policy-file: %s\naudit-log-path: %s\n", policy, log))
	defer t.stop()
	audited, err := mastersUserConfig(t, auditedUser)
	if err != nil {
		b.Fatal(err)
	}
	fmt.Printf("audit cost: %s, configmaps, json, %d clients, (admin unaudited and %s audited at %s alternating)\n",
		t.name, interleavedClients, auditedUser, level)
	interleave(b, t, "admin", "audited", audited)
	if fi, err := os.Stat(log); err != nil || fi.Size() == 0 {
		b.Fatalf("the audit log %s is empty or missing: %v", log, err)
	} else {
		fmt.Printf("  audit log: %d MB\n", fi.Size()>>20)
	}
}
