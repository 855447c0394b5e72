package join

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"k8s.io/utils/clock"

	"orch/internal/pki"
)

// The paths a server of a cluster started with --cluster-init serves to
// servers that join it (orch server --server URL --token TOKEN). Both
// authenticate with HTTP basic auth, user ServerUser and the token's secret.
const (
	// ServerBootstrapPath answers GET with a SealedBootstrap.
	ServerBootstrapPath = "/v1-orch/server-bootstrap"
	// EtcdMembersPath answers POST of an EtcdMemberRequest: the caller is
	// added to etcd as a learner; the answer is an EtcdMemberResponse.
	EtcdMembersPath = "/v1-orch/etcd-members"
	// ServerUser is the basic auth user name of both. Only the server
	// token's secret is accepted: an agent token gets 401.
	ServerUser = "server"
)

// ServerSettings are the flags every server of a cluster must agree on.
type ServerSettings struct {
	ClusterCIDR   string `json:"clusterCIDR"`
	ServiceCIDR   string `json:"serviceCIDR"`
	ClusterDNS    string `json:"clusterDNS"`
	ClusterDomain string `json:"clusterDomain"`
	// HTTPSPort is the apiserver's: the default/kubernetes Endpoints,
	// where agents find every server, have one port for all.
	HTTPSPort int `json:"httpsPort"`
}

// Mismatch names the first flag whose value differs from the cluster's,
// in a sentence that says what to do; "" when they agree.
func (mine ServerSettings) Mismatch(cluster ServerSettings) string {
	for _, f := range []struct{ flag, mine, theirs string }{
		{"--cluster-cidr", mine.ClusterCIDR, cluster.ClusterCIDR},
		{"--service-cidr", mine.ServiceCIDR, cluster.ServiceCIDR},
		{"--cluster-dns", mine.ClusterDNS, cluster.ClusterDNS},
		{"--cluster-domain", mine.ClusterDomain, cluster.ClusterDomain},
		{"--https-listen-port", strconv.Itoa(mine.HTTPSPort), strconv.Itoa(cluster.HTTPSPort)},
	} {
		if f.mine != f.theirs {
			return fmt.Sprintf("%s %s differs from the cluster's %s: every server of a cluster must use the same value; start this server with %s %s",
				f.flag, f.mine, f.theirs, f.flag, f.theirs)
		}
	}
	return ""
}

// ServerBootstrap is what a joining server needs to be one of the cluster:
// the files of the shared PKI (the cluster CA and key, the service account
// key, the etcd CA and key), by path relative to data-dir/server/tls, and
// the settings it must agree with.
type ServerBootstrap struct {
	Files    map[string]string `json:"files"`
	Settings ServerSettings    `json:"settings"`
	// AgentToken is the cluster's agent token (K10<hash>::node:<secret>),
	// which every server accepts; a server of an older version sends none.
	AgentToken string `json:"agentToken,omitempty"`
}

// SealedBootstrap is a ServerBootstrap in JSON, sealed with the token (see
// Seal), so that it is secret even from a TLS terminator in the middle.
type SealedBootstrap struct {
	Sealed []byte `json:"sealed"`
}

// EtcdMemberRequest asks to add the caller to etcd as a learner.
type EtcdMemberRequest struct {
	Name    string `json:"name"`
	PeerURL string `json:"peerURL"`
}

// EtcdMemberResponse is etcd's initial cluster for the new member
// (name=peerURL,…, the new member included).
type EtcdMemberResponse struct {
	InitialCluster string `json:"initialCluster"`
}

// ServerJoin is a server joining the cluster of the server at URL.
type ServerJoin struct {
	c     checked
	caPEM []byte
}

// NewServerJoin checks the token, fetches the cluster CA from server and
// verifies it against the token's hash before anything is sent. It
// retries while the server cannot be reached and ctx lives.
func NewServerJoin(ctx context.Context, server, token string, log *slog.Logger) (*ServerJoin, error) {
	u, err := url.Parse(server)
	if server == "" || err != nil || u.Scheme != "https" || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("orch server: --server %q is not the URL of an orch server (e.g. https://10.0.0.1:6443)", server)
	}
	c := checked{Config: Config{Server: "https://" + u.Host, Log: log, Clock: clock.RealClock{}, initialBackoff: time.Second, maxBackoff: 10 * time.Second}}
	t, err := pki.ParseJoinToken(token)
	if err == nil && t.User == pki.AgentTokenUser {
		err = fmt.Errorf("%w: it is an agent token (::node:), which only joins agents; a server joins with the server token, data-dir/server/token on the first server", ErrInvalidToken)
	}
	if err != nil {
		return nil, fmt.Errorf("orch server: --token: %w", err)
	}
	c.caHash, c.secret, c.passphrase = t.CAHash, t.Secret, t.Passphrase()
	j := &ServerJoin{c: c}
	err = retry(ctx, c, "fetch the cluster CA", func(ctx context.Context) error {
		j.caPEM, err = fetchCA(ctx, c)
		return err
	})
	if err == nil && c.passphrase {
		warnTrustOnFirstUse(c, j.caPEM, pki.ServerTokenUser)
	}
	return j, err
}

// CAPEM is the cluster CA the server sent, checked against the token's
// hash (or, for a passphrase, trusted on first use).
func (j *ServerJoin) CAPEM() []byte { return j.caPEM }

// Token is the full server token K10<hash>::server:<secret> of the
// cluster: the one given, or the passphrase with the CA's hash.
func (j *ServerJoin) Token() string { return pki.FormatToken(pki.CAHash(j.caPEM), j.c.secret) }

// Bootstrap fetches and opens the cluster's shared files and settings.
func (j *ServerJoin) Bootstrap(ctx context.Context) (*ServerBootstrap, error) {
	var sealed SealedBootstrap
	if err := j.call(ctx, http.MethodGet, ServerBootstrapPath, nil, &sealed); err != nil {
		return nil, err
	}
	plain, err := Open(j.c.secret, sealed.Sealed)
	if err != nil {
		return nil, fmt.Errorf("orch server: cannot open the cluster's bootstrap data with the token: %w", err)
	}
	var b ServerBootstrap
	if err := json.Unmarshal(plain, &b); err != nil {
		return nil, fmt.Errorf("orch server: cannot decode the cluster's bootstrap data: %w (is %s an orch server of the same version?)", err, j.c.Server)
	}
	return &b, nil
}

// AddEtcdMember asks the server to add this server's etcd member.
func (j *ServerJoin) AddEtcdMember(ctx context.Context, name, peerURL string) (string, error) {
	var answer EtcdMemberResponse
	err := j.call(ctx, http.MethodPost, EtcdMembersPath, EtcdMemberRequest{Name: name, PeerURL: peerURL}, &answer)
	return answer.InitialCluster, err
}

// call sends one request, verified against the CA, with retries while
// the server cannot be reached.
func (j *ServerJoin) call(ctx context.Context, method, path string, body, answer any) error {
	pool, err := pki.CAPoolFromPEM(j.caPEM)
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12, ServerName: "kubernetes"},
	}}
	defer client.CloseIdleConnections()
	return retry(ctx, j.c, method+" "+path, func(ctx context.Context) error {
		var reader io.Reader
		if body != nil {
			data, err := json.Marshal(body)
			if err != nil {
				return err
			}
			reader = bytes.NewReader(data)
		}
		req, err := http.NewRequestWithContext(ctx, method, j.c.Server+path, reader)
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.SetBasicAuth(ServerUser, j.c.secret)
		resp, err := client.Do(req)
		if err != nil {
			return unreachable(j.c, err)
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
		if err != nil {
			return unreachable(j.c, err)
		}
		if resp.StatusCode != http.StatusOK {
			return statusError(j.c, resp, data, method+" "+path)
		}
		if err := json.Unmarshal(data, answer); err != nil {
			return fmt.Errorf("orch server: cannot decode the answer to %s %s: %w", method, path, err)
		}
		return nil
	})
}
