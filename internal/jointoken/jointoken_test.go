package jointoken

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"orch/internal/pki"
)

var (
	caPEM  = []byte("-----BEGIN CERTIFICATE-----\nca\n-----END CERTIFICATE-----\n")
	caHash = pki.CAHash(caPEM)
)

func server(secret string) string { return pki.FormatToken(caHash, secret) }
func agent(secret string) string  { return pki.FormatAgentToken(caHash, secret) }

func TestSealRecord(t *testing.T) {
	key := []byte("-----BEGIN EC PRIVATE KEY-----\nkey\n-----END EC PRIVATE KEY-----\n")
	r := Record{Server: server("s1"), Agent: agent("a1"), Retired: []string{RetiredHash("s0")}}
	sealed, err := SealRecord(key, r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(sealed), "s1") || strings.Contains(string(sealed), "a1") {
		t.Error("the sealed record shows a secret")
	}
	got, err := OpenRecord(key, sealed)
	if err != nil {
		t.Fatal(err)
	}
	if got.Server != r.Server || got.Agent != r.Agent || len(got.Retired) != 1 || got.Retired[0] != r.Retired[0] {
		t.Errorf("opened %+v, want %+v", got, r)
	}
	if _, err := OpenRecord([]byte("another key"), sealed); err == nil || !strings.Contains(err.Error(), "ca.key") {
		t.Errorf("OpenRecord with another CA key: %v, want an error naming ca.key", err)
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := OpenRecord(key, sealed); err == nil {
		t.Error("OpenRecord of altered data succeeded")
	}
	for _, bad := range []Record{
		{Server: server("same"), Agent: agent("same")},
		{Server: agent("s"), Agent: agent("a")},
		{Server: server("s"), Agent: "a"},
	} {
		if _, err := SealRecord(key, bad); err == nil {
			t.Errorf("SealRecord(%+v) succeeded", bad)
		}
	}
	if _, err := SealRecord(nil, r); err == nil {
		t.Error("SealRecord without a CA key succeeded")
	}
}

func TestHolder(t *testing.T) {
	h, err := NewHolder(Record{Server: server("s1"), Agent: agent("a1")})
	if err != nil {
		t.Fatal(err)
	}
	if c := h.Load(); c.ServerSecret != "s1" || c.AgentSecret != "a1" || c.Agent != agent("a1") {
		t.Errorf("Load() = %+v", c)
	}
	if changed, err := h.Store(Record{Server: server("s1"), Agent: agent("a1"), Retired: []string{"x"}}); err != nil || changed {
		t.Errorf("Store of the same tokens: changed %v, %v", changed, err)
	}
	if changed, err := h.Store(Record{Server: server("s2"), Agent: agent("a1")}); err != nil || !changed {
		t.Errorf("Store of a new server token: changed %v, %v", changed, err)
	}
	if _, err := h.Store(Record{Server: server("x"), Agent: agent("x")}); err == nil {
		t.Error("Store of equal secrets succeeded")
	}
	if c := h.Load(); c.ServerSecret != "s2" {
		t.Errorf("after a refused Store the server secret is %q, want s2", c.ServerSecret)
	}
	if _, err := NewHolder(Record{}); err == nil {
		t.Error("NewHolder of an empty record succeeded")
	}
}

func TestReconcile(t *testing.T) {
	cluster := &Record{Server: server("s2"), Agent: agent("a2"), Retired: []string{RetiredHash("s1"), RetiredHash("a1")}}
	for _, tc := range []struct {
		name    string
		local   Record
		cluster *Record
		given   Given
		want    Outcome
		wantErr string
	}{
		{name: "first start: the local tokens become the cluster's", local: Record{Server: server("s1"), Agent: agent("a1")},
			want: Outcome{Record: Record{Server: server("s1"), Agent: agent("a1")}, Write: true}},
		{name: "in agreement", local: Record{Server: server("s2"), Agent: agent("a2")}, cluster: cluster, given: Given{Server: true, Agent: true},
			want: Outcome{Record: *cluster}},
		{name: "stopped during rotations: adopts both", local: Record{Server: server("s1"), Agent: agent("a1")}, cluster: cluster,
			want: Outcome{Record: *cluster, AdoptedServer: true, AdoptedAgent: true}},
		{name: "rotated server token given with --token", local: Record{Server: server("s1"), Agent: agent("a2")}, cluster: cluster, given: Given{Server: true},
			wantErr: "rotated away"},
		{name: "another server token given with --token", local: Record{Server: server("zz"), Agent: agent("a2")}, cluster: cluster, given: Given{Server: true},
			wantErr: "not the cluster's server token"},
		{name: "rotated agent token given with --agent-token", local: Record{Server: server("s2"), Agent: agent("a1")}, cluster: cluster, given: Given{Agent: true},
			wantErr: "rotated away"},
		{name: "--agent-token with the cluster's server secret", local: Record{Server: server("s1"), Agent: agent("s2")}, cluster: cluster, given: Given{Agent: true},
			wantErr: "server token's secret"},
		{name: "a new --agent-token replaces the cluster's", local: Record{Server: server("s2"), Agent: agent("a3")}, cluster: cluster, given: Given{Server: true, Agent: true},
			want: Outcome{Record: Record{Server: server("s2"), Agent: agent("a3"), Retired: []string{RetiredHash("s1"), RetiredHash("a1"), RetiredHash("a2")}},
				Write: true, ReplacedAgent: true}},
		{name: "a new --agent-token on a server that was behind", local: Record{Server: server("s1"), Agent: agent("a3")}, cluster: cluster, given: Given{Agent: true},
			want: Outcome{Record: Record{Server: server("s2"), Agent: agent("a3"), Retired: []string{RetiredHash("s1"), RetiredHash("a1"), RetiredHash("a2")}},
				Write: true, AdoptedServer: true, ReplacedAgent: true}},
		{name: "invalid local tokens", local: Record{Server: server("x"), Agent: agent("x")}, cluster: cluster, wantErr: "secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Reconcile(tc.local, tc.cluster, tc.given)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Reconcile: %v, want an error saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("Reconcile =\n %+v\nwant\n %+v", got, tc.want)
			}
		})
	}
	if cluster.Retired[len(cluster.Retired)-1] != RetiredHash("a1") {
		t.Error("Reconcile changed the cluster's record it was given")
	}
}

func TestRotate(t *testing.T) {
	current := Record{Server: server("s1"), Agent: agent("a1"), Retired: []string{RetiredHash("s0")}}
	other := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name       string
		kind       Kind
		given      string
		wantServer string // "" means a new random secret
		wantAgent  string
		wantErr    error
		say        string
	}{
		{name: "server, generated", kind: ServerToken, wantAgent: agent("a1")},
		{name: "agent, generated", kind: AgentToken, wantServer: server("s1")},
		{name: "server, passphrase", kind: ServerToken, given: "new-pass", wantServer: server("new-pass"), wantAgent: agent("a1")},
		{name: "server, full token", kind: ServerToken, given: server("s9"), wantServer: server("s9"), wantAgent: agent("a1")},
		{name: "agent, full token", kind: AgentToken, given: agent("a9"), wantServer: server("s1"), wantAgent: agent("a9")},
		{name: "agent, passphrase", kind: AgentToken, given: "p", wantServer: server("s1"), wantAgent: agent("p")},
		{name: "server given an agent token", kind: ServerToken, given: agent("x"), wantErr: pki.ErrInvalidToken, say: "--agent"},
		{name: "agent given a server token", kind: AgentToken, given: server("x"), wantErr: pki.ErrInvalidToken, say: "without --agent"},
		{name: "another CA", kind: ServerToken, given: pki.FormatToken(other, "x"), wantErr: pki.ErrCAHashMismatch},
		{name: "the current server secret", kind: ServerToken, given: "s1", wantErr: pki.ErrInvalidToken, say: "current server token"},
		{name: "the current agent secret", kind: AgentToken, given: agent("a1"), wantErr: pki.ErrInvalidToken, say: "current agent token"},
		{name: "server given the agent's secret", kind: ServerToken, given: "a1", wantErr: pki.ErrInvalidToken, say: "must differ"},
		{name: "agent given the server's secret", kind: AgentToken, given: "s1", wantErr: pki.ErrInvalidToken, say: "must differ"},
		{name: "a retired secret", kind: ServerToken, given: "s0", wantErr: pki.ErrInvalidToken, say: "rotated away"},
		{name: "malformed", kind: ServerToken, given: "K10nope", wantErr: pki.ErrInvalidToken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Rotate(current, caPEM, tc.kind, tc.given)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.say) {
					t.Fatalf("Rotate: %v, want %v saying %q", err, tc.wantErr, tc.say)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := got.check(); err != nil {
				t.Fatalf("rotated record: %v", err)
			}
			old, changed, wantChanged, kept, wantKept := "s1", got.Server, tc.wantServer, got.Agent, tc.wantAgent
			if tc.kind == AgentToken {
				old, changed, wantChanged, kept, wantKept = "a1", got.Agent, tc.wantAgent, got.Server, tc.wantServer
			}
			if kept != wantKept {
				t.Errorf("the other token is %q, want %q", kept, wantKept)
			}
			if tc.given != "" && changed != wantChanged {
				t.Errorf("the rotated token is %q, want %q", changed, wantChanged)
			}
			if tc.given == "" {
				if t2, err := pki.ParseJoinToken(changed); err != nil || t2.CAHash != caHash || len(t2.Secret) != 32 || t2.Secret == old {
					t.Errorf("the generated token %q: %v", changed, err)
				}
			}
			if want := []string{RetiredHash("s0"), RetiredHash(old)}; fmt.Sprint(got.Retired) != fmt.Sprint(want) {
				t.Errorf("retired %v, want %v", got.Retired, want)
			}
		})
	}
	if len(current.Retired) != 1 {
		t.Error("Rotate changed the record it was given")
	}
}

func TestRetiredIsBounded(t *testing.T) {
	r := Record{Server: server("s"), Agent: agent("a")}
	for i := range maxRetired + 5 {
		r.retire(fmt.Sprint("secret-", i))
	}
	r.retire("secret-40") // already there: moves to the end
	if len(r.Retired) != maxRetired {
		t.Fatalf("%d retired, want %d", len(r.Retired), maxRetired)
	}
	if r.Retired[len(r.Retired)-1] != RetiredHash("secret-40") || r.isRetired("secret-0") || !r.isRetired("secret-10") {
		t.Errorf("retired keeps the wrong secrets")
	}
}
