package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/join"
	"orch/internal/pki"
)

// sharedFiles are the files, relative to data-dir/server/tls, that every
// server of a cluster has the same copy of.
var sharedFiles = []string{pki.CACertFile, pki.CAKeyFile, pki.ServiceAccountKeyFile,
	filepath.Join("etcd", pki.CACertFile), filepath.Join("etcd", pki.CAKeyFile),
	filepath.Join("front-proxy", pki.CACertFile), filepath.Join("front-proxy", pki.CAKeyFile)}

// clusterServers is what a server of a cluster with several servers
// hands to servers that join it.
type clusterServers struct {
	etcd     *clientv3.Client
	tlsDir   string
	settings join.ServerSettings
}

// serveServerBootstrap answers a joining server with the shared files and
// settings, sealed with the token.
func (h *joinHandler) serveServerBootstrap(w http.ResponseWriter, r *http.Request) {
	if !h.serverRequest(w, r, http.MethodGet) {
		return
	}
	files, err := readSharedFiles(h.servers.tlsDir)
	if err != nil {
		writeJoinError(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error())
		return
	}
	tokens := h.tokens.Load()
	b := join.ServerBootstrap{Files: files, Settings: h.servers.settings, AgentToken: tokens.Agent}
	plain, err := json.Marshal(b)
	if err == nil {
		var sealed []byte
		if sealed, err = join.Seal(tokens.ServerSecret, plain); err == nil {
			writeJSON(w, join.SealedBootstrap{Sealed: sealed})
			return
		}
	}
	writeJoinError(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error())
}

// serveEtcdMembers adds a joining server's etcd member as a learner (it
// is promoted to a voter once it has caught up; see etcdMembers).
func (h *joinHandler) serveEtcdMembers(w http.ResponseWriter, r *http.Request) {
	if !h.serverRequest(w, r, http.MethodPost) {
		return
	}
	var req join.EtcdMemberRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&req); err != nil {
		writeJoinError(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "cannot decode the etcd member request: "+err.Error())
		return
	}
	if u, err := url.Parse(req.PeerURL); err != nil || u.Scheme != "https" || u.Host == "" || req.Name == "" {
		writeJoinError(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "an etcd member needs a name and an https:// peer URL")
		return
	}
	initial, err := addLearner(r.Context(), h.servers.etcd, req)
	if err != nil {
		writeJoinError(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "cannot add the etcd member: "+err.Error())
		return
	}
	h.log.Info("added a server's etcd member as a learner", "member", req.Name, "peer", req.PeerURL)
	writeJSON(w, join.EtcdMemberResponse{InitialCluster: initial})
}

// serverRequest checks the method, that servers may join, and the token.
func (h *joinHandler) serverRequest(w http.ResponseWriter, r *http.Request, method string) bool {
	switch {
	case r.Method != method:
		w.Header().Set("Allow", method)
		writeJoinError(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, method+" "+r.URL.Path+" is for servers that join")
	case !h.authorizedAs(r, join.ServerUser):
		writeJoinError(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized,
			"a server joins with the cluster's server token (data-dir/server/token on the first server); the agent token only joins agents")
	case h.servers == nil:
		writeJoinError(w, http.StatusForbidden, metav1.StatusReasonForbidden,
			"this server runs a single-server etcd: restart it with --cluster-init before other servers join it")
	default:
		return true
	}
	return false
}

// addLearner adds the member (replacing one left with the same peer URL
// by an earlier life of that server) and returns etcd's initial cluster
// for it.
func addLearner(ctx context.Context, client *clientv3.Client, req join.EtcdMemberRequest) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	list, err := client.MemberList(ctx)
	if err != nil {
		return "", err
	}
	for _, m := range list.Members {
		if slices.Contains(m.PeerURLs, req.PeerURL) {
			if _, err := client.MemberRemove(ctx, m.ID); err != nil {
				return "", fmt.Errorf("remove the old member %q with peer URL %s: %w", m.Name, req.PeerURL, err)
			}
		}
	}
	added, err := client.MemberAddAsLearner(ctx, []string{req.PeerURL})
	if err != nil {
		return "", err
	}
	var parts []string
	for _, m := range added.Members {
		name := m.Name
		if m.ID == added.Member.ID {
			name = req.Name
		}
		for _, u := range m.PeerURLs {
			parts = append(parts, name+"="+u)
		}
	}
	return strings.Join(parts, ","), nil
}

// writeJSON answers 200 with v (a failed write means the caller left).
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}
