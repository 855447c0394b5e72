package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"orch/internal/fsutil"
	"orch/internal/jointoken"
	"orch/internal/pki"
)

// The server keeps two join tokens, as k3s does: the server token
// (data-dir/server/token, K10<hash>::server:<secret>) joins servers and
// agents, and is the only one that may fetch the cluster's sealed keys or
// add an etcd member; the agent token (data-dir/server/agent-token,
// K10<hash>::node:<secret>) only gets node certificates. The cluster keeps
// both in etcd too (jointoken.Record): a starting server agrees its files
// with it (tokensync.go), every running server follows it, and orch token
// rotate changes it (tokenrotate.go).

// agentTokenKey names the agent token among the sealed shared files kept
// in etcd for snapshots (see storeBootstrap); it is not a file of tls/.
const agentTokenKey = "agent-token"

func (c Config) agentTokenPath() string { return filepath.Join(c.serverDir(), "agent-token") }

// agentTokenGiven is --agent-token, or the content of --agent-token-file;
// "" when neither is given.
func (p parsed) agentTokenGiven() (string, error) {
	if p.AgentToken != "" {
		return strings.TrimSpace(p.AgentToken), nil
	}
	if p.AgentTokenFile != "" {
		data, err := os.ReadFile(p.AgentTokenFile)
		if err != nil {
			return "", fmt.Errorf("orch server: --agent-token-file: %w", err)
		}
		return strings.TrimSpace(string(data)), nil
	}
	return "", nil
}

// serverTokenGiven is --token, or the content of --token-file; "" when
// neither is given.
func (p parsed) serverTokenGiven() (string, error) {
	if p.Token == "" && p.TokenFile == "" {
		return "", nil
	}
	return p.joinToken()
}

// ensureTokens returns the server token and the agent token, creating
// what is missing. The server token's secret is --token's when given (a
// full token or a passphrase: on the first server it becomes the
// cluster's; later it must be the file's), else the file's, else a new
// random one. The agent token is --agent-token when given (which then
// replaces the file's), else the file's, else a new random one.
func (p parsed) ensureTokens(caPEM []byte) (server, agent string, err error) {
	given, err := p.serverTokenGiven()
	if err != nil {
		return "", "", err
	}
	if server, err = pki.EnsureServerToken(p.tokenPath(), caPEM, given); err != nil {
		return "", "", fmt.Errorf("orch server: --token: %w", err)
	}
	if given, err = p.agentTokenGiven(); err != nil {
		return "", "", err
	}
	if agent, err = pki.EnsureAgentToken(p.agentTokenPath(), caPEM, given); err != nil {
		return "", "", fmt.Errorf("orch server: --agent-token: %w", err)
	}
	_, serverSecret, _ := pki.ParseToken(server)
	if _, agentSecret, _ := pki.ParseToken(agent); agentSecret == serverSecret {
		return "", "", errors.New("orch server: the agent token's secret is the server token's: an agent token must not open what only servers may; " +
			"give --agent-token another secret")
	}
	return server, agent, nil
}

// tokensGiven says which tokens the flags give: --token (or --token-file)
// and --agent-token (or --agent-token-file).
func (p parsed) tokensGiven() jointoken.Given {
	return jointoken.Given{Server: p.Token != "" || p.TokenFile != "", Agent: p.AgentToken != "" || p.AgentTokenFile != ""}
}

// writeTokenFile replaces a token file (mode 0600) in one step.
func writeTokenFile(path, token string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("orch server: create the directory of %s: %w", path, err)
	}
	if err := fsutil.WriteFileAtomic(path, []byte(token+"\n"), 0o600); err != nil {
		return fmt.Errorf("orch server: write %s: %w", path, err)
	}
	return nil
}

// writeAgentToken keeps the cluster's agent token (from the server joined
// or a snapshot) where ensureTokens finds it.
func (p parsed) writeAgentToken(token string) error {
	if _, _, err := pki.ParseToken(token); err != nil {
		return fmt.Errorf("orch server: the cluster's agent token: %w", err)
	}
	return writeTokenFile(p.agentTokenPath(), token)
}
