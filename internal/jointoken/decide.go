package jointoken

import (
	"fmt"

	"orch/internal/pki"
)

// Given says which tokens a server's flags gave at this start: --token
// (or --token-file) and --agent-token (or --agent-token-file).
type Given struct{ Server, Agent bool }

// Outcome is what a starting server holds.
type Outcome struct {
	// Record is the cluster's tokens from now on.
	Record Record
	// Write says the cluster's record must be written: it was absent, or
	// --agent-token replaced the agent token.
	Write bool
	// AdoptedServer and AdoptedAgent say the server's files held other
	// tokens than the cluster's (rotated while it was stopped) and must be
	// rewritten with the cluster's.
	AdoptedServer, AdoptedAgent bool
	// ReplacedAgent says --agent-token replaced the cluster's agent token.
	ReplacedAgent bool
}

// Reconcile decides which tokens a starting server holds. local are its
// files' tokens (after its flags applied to them), cluster the record in
// etcd (nil when there is none yet: local becomes the cluster's).
//
// The cluster's server token wins: a server whose file is behind adopts
// it, but one given an old one with --token is refused, so that a server
// never quietly accepts a rotated token. The agent token given with
// --agent-token replaces the cluster's, on every server (as it replaces
// the file's), unless it is one rotated away; without the flag the
// cluster's wins.
func Reconcile(local Record, cluster *Record, given Given) (Outcome, error) {
	if err := local.check(); err != nil {
		return Outcome{}, err
	}
	if cluster == nil {
		return Outcome{Record: Record{Server: local.Server, Agent: local.Agent}, Write: true}, nil
	}
	out := Outcome{Record: *cluster}
	localServer, localAgent, _ := local.Secrets()
	clusterServer, clusterAgent, err := cluster.Secrets()
	if err != nil {
		return Outcome{}, err
	}
	if localServer != clusterServer {
		if given.Server {
			if cluster.isRetired(localServer) {
				return Outcome{}, fmt.Errorf("%w: --token is a server token that was rotated away (orch token rotate): "+
					"put the cluster's current server token in this server's --token (or --token-file); a server that has it keeps it in data-dir/server/token", pki.ErrInvalidToken)
			}
			return Outcome{}, fmt.Errorf("%w: --token is not the cluster's server token: give the current one (data-dir/server/token on a server of the cluster); "+
				"to change it, run orch token rotate --new-token on a server", pki.ErrInvalidToken)
		}
		out.AdoptedServer = true
	}
	if localAgent == clusterAgent {
		return out, nil
	}
	if !given.Agent {
		out.AdoptedAgent = true
		return out, nil
	}
	switch {
	case cluster.isRetired(localAgent):
		return Outcome{}, fmt.Errorf("%w: --agent-token is an agent token that was rotated away (orch token rotate --agent): "+
			"put the cluster's current agent token in this server's --agent-token (or remove the flag); it is in data-dir/server/agent-token", pki.ErrInvalidToken)
	case localAgent == clusterServer:
		return Outcome{}, fmt.Errorf("%w: --agent-token has the server token's secret: an agent token must not open what only servers may; give another secret", pki.ErrInvalidToken)
	}
	out.Record.Agent = local.Agent
	out.Record.retire(clusterAgent)
	out.Write, out.ReplacedAgent = true, true
	return out, nil
}

// Kind is which token Rotate replaces.
type Kind int

const (
	// ServerToken joins servers and agents and seals the bootstrap data.
	ServerToken Kind = iota
	// AgentToken joins agents only.
	AgentToken
)

func (k Kind) String() string {
	if k == AgentToken {
		return "agent token"
	}
	return "server token"
}

// Rotate returns current with the token of kind replaced: its secret is
// given's (a full token of this CA and kind, or a passphrase) or, when
// given is "", a new random one. The old secret is retired. caPEM is the
// cluster CA certificate, whose hash the new token carries.
func Rotate(current Record, caPEM []byte, kind Kind, given string) (Record, error) {
	if err := current.check(); err != nil {
		return Record{}, err
	}
	server, agent, _ := current.Secrets()
	caHash := pki.CAHash(caPEM)
	var secret string
	if given == "" {
		var err error
		if secret, err = pki.NewSecret(); err != nil {
			return Record{}, err
		}
	} else {
		t, err := pki.ParseJoinToken(given)
		if err != nil {
			return Record{}, fmt.Errorf("--new-token: %w", err)
		}
		wantUser, article, otherFlag := pki.ServerTokenUser, "a", "with --agent"
		if kind == AgentToken {
			wantUser, article, otherFlag = pki.AgentTokenUser, "an", "without --agent"
		}
		switch {
		case !t.Passphrase() && t.CAHash != caHash:
			return Record{}, fmt.Errorf("%w: --new-token names the CA hash %s, but this cluster's CA has hash %s", pki.ErrCAHashMismatch, t.CAHash, caHash)
		case !t.Passphrase() && t.User != wantUser:
			return Record{}, fmt.Errorf("%w: --new-token is a ::%s: token, not %s %s: give a K10<hash>::%s:<secret> token or a passphrase (or run orch token rotate %s to rotate the other token)",
				pki.ErrInvalidToken, t.User, article, kind, wantUser, otherFlag)
		}
		secret = t.Secret
	}
	old, other := server, agent
	if kind == AgentToken {
		old, other = agent, server
	}
	switch {
	case secret == old:
		return Record{}, fmt.Errorf("%w: --new-token is the current %s: give another one, or none to have one generated", pki.ErrInvalidToken, kind)
	case secret == other:
		return Record{}, fmt.Errorf("%w: --new-token's secret is the other token's: the server token and the agent token must differ", pki.ErrInvalidToken)
	case current.isRetired(secret):
		return Record{}, fmt.Errorf("%w: --new-token was a join token of this cluster before and was rotated away: choose a new one", pki.ErrInvalidToken)
	}
	next := Record{Server: current.Server, Agent: current.Agent, Retired: current.Retired}
	if kind == AgentToken {
		next.Agent = pki.FormatAgentToken(caHash, secret)
	} else {
		next.Server = pki.FormatToken(caHash, secret)
	}
	next.retire(old)
	return next, nil
}
