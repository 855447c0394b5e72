package server

import (
	"context"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"orch/internal/apiserver"
	"orch/internal/apiserver/filters"
	"orch/internal/join"
	"orch/internal/jointoken"
	"orch/internal/pki"
)

// joinHandler serves what agents need to join (see internal/join/api.go):
// the CA certificate, unauthenticated, and node certificates signed from the
// agent's CSRs for callers that know the join token's secret.
type joinHandler struct {
	bundle *pki.Bundle
	// tokens are the cluster's current join tokens: the server token's
	// secret joins servers and agents, the agent token's only agents.
	// They change while the server runs (orch token rotate; see
	// tokenWatcher).
	tokens *jointoken.Holder
	// ownSecret is the secret of the server's own agent, made anew at
	// every start and never written: only that agent, inside this
	// process, knows it. Its serving certificate may name this server's
	// names and addresses, which are the node's (see reservedSANs).
	ownSecret string
	// cluster goes to agents with their certificates.
	cluster join.Cluster
	// client writes the node password secrets (the loopback clientset).
	client kubernetes.Interface
	// cluster is nil on a server other servers cannot join (no --cluster-init).
	servers *clusterServers
	// policyReady is closed once the authorizer holds the bootstrap RBAC
	// policy; until then a node's credentials would be refused, so
	// certificates are not issued (nil: always ready).
	policyReady <-chan struct{}
	validity    time.Duration
	log         *slog.Logger
}

func newJoinHandler(bundle *pki.Bundle, tokens *jointoken.Holder, ownSecret string, cluster join.Cluster, loopback *rest.Config, log *slog.Logger) (*joinHandler, error) {
	client, err := kubernetes.NewForConfig(loopback)
	if err != nil {
		return nil, err
	}
	return &joinHandler{bundle: bundle, tokens: tokens, ownSecret: ownSecret,
		cluster: cluster, client: client, validity: pki.LeafValidity, log: log}, nil
}

// newOwnSecret makes the secret of the server's own agent (see
// joinHandler.ownSecret).
func newOwnSecret() (string, error) {
	own := make([]byte, 32)
	if _, err := rand.Read(own); err != nil {
		return "", err
	}
	return hex.EncodeToString(own), nil
}

// wrap answers the join paths and hands every other request to next.
func (h *joinHandler) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case join.CACertsPath:
			h.serveCACerts(w, r)
		case join.CertificatesPath:
			h.serveCertificates(w, r)
		case join.ServerBootstrapPath:
			h.serveServerBootstrap(w, r)
		case join.EtcdMembersPath:
			h.serveEtcdMembers(w, r)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

func (h *joinHandler) serveCACerts(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeJoinError(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "GET "+join.CACertsPath+" returns the cluster CA certificate")
		return
	}
	w.Header().Set("Content-Type", "application/x-pem-file")
	w.Header().Set("Content-Length", strconv.Itoa(len(h.bundle.CACertPEM)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		w.Write(h.bundle.CACertPEM)
	}
}

// started reports whether the server's authorization policy is in force.
func (h *joinHandler) started() bool {
	if h.policyReady == nil {
		return true
	}
	select {
	case <-h.policyReady:
		return true
	default:
		return false
	}
}

// maxJoinBody bounds a CertificatesRequest (two CSRs and a few names).
const maxJoinBody = 64 << 10

func (h *joinHandler) serveCertificates(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeJoinError(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "POST a node certificates request to "+join.CertificatesPath)
		return
	}
	remote := r.RemoteAddr
	if !h.authorized(r) {
		h.log.Warn("refused a node certificate request with a wrong join token secret", "remote", remote)
		w.Header().Set("WWW-Authenticate", `Basic realm="orch join"`)
		writeJoinError(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized,
			"the join token's secret is wrong: copy the agent token from data-dir/server/agent-token (or the server token from data-dir/server/token) on the server and pass it with --token")
		return
	}
	if !h.started() {
		w.Header().Set("Retry-After", "1")
		writeJoinError(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "the server is still starting: its authorization policy is not in force yet (retry shortly)")
		return
	}
	var req join.CertificatesRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxJoinBody)).Decode(&req); err != nil {
		writeJoinError(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "cannot decode the node certificates request: "+err.Error())
		return
	}
	csrs, err := checkCertificatesRequest(req)
	if err != nil {
		writeJoinError(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
		return
	}
	log := h.log.With("node", req.NodeName, "remote", remote)
	if !h.isOwnAgent(r) {
		reserved := apiserverSANs(h.bundle.Serving)
		if h.servers != nil {
			members, err := listServers(r.Context(), h.servers.etcd)
			if err != nil {
				w.Header().Set("Retry-After", "1")
				writeJoinError(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "cannot list the cluster's servers yet (retry shortly): "+err.Error())
				return
			}
			reserved.addMembers(members)
		}
		if err := reserved.check(csrs.serving); err != nil {
			log.Warn("refused node certificates", "err", err)
			writeJoinError(w, http.StatusForbidden, metav1.StatusReasonForbidden, err.Error())
			return
		}
	}
	registration, code, err := h.checkNodePassword(r.Context(), req.NodeName, req.NodePassword)
	if err != nil {
		reason := metav1.StatusReasonConflict
		if code != http.StatusConflict {
			reason = metav1.StatusReasonServiceUnavailable
			w.Header().Set("Retry-After", "1")
		}
		log.Warn("refused node certificates", "err", err)
		writeJoinError(w, code, reason, err.Error())
		return
	}
	resp, err := h.sign(csrs, registration)
	if err != nil {
		writeJoinError(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error())
		return
	}
	log.Info("issued node certificates", "hostname", req.Hostname, "ips", strings.Join(req.NodeIPs, ","), "components", len(resp.ComponentCertificates))
	writeJSON(w, resp)
}

// sign signs the checked CSRs of one request; the node's client
// certificate names its registration (the password secret's UID), so that
// the apiserver stops accepting it once that registration is gone.
func (h *joinHandler) sign(csrs checkedCSRs, registration types.UID) (join.CertificatesResponse, error) {
	resp := join.CertificatesResponse{CA: string(h.bundle.CACertPEM), Cluster: h.cluster}
	_, clientPEM, err := h.bundle.SignCSR(csrs.client, x509.ExtKeyUsageClientAuth, h.validity, apiserver.NodeRegistrationUnit+string(registration))
	if err != nil {
		return resp, err
	}
	_, servingPEM, err := h.bundle.SignCSR(csrs.serving, x509.ExtKeyUsageServerAuth, h.validity)
	if err != nil {
		return resp, err
	}
	resp.ClientCertificate, resp.ServingCertificate = string(clientPEM), string(servingPEM)
	for user, csr := range csrs.components {
		_, certPEM, err := h.bundle.SignCSR(csr, x509.ExtKeyUsageClientAuth, h.validity)
		if err != nil {
			return resp, err
		}
		if resp.ComponentCertificates == nil {
			resp.ComponentCertificates = map[string]string{}
		}
		resp.ComponentCertificates[user] = string(certPEM)
	}
	return resp, nil
}

// authorized checks HTTP basic auth: user TokenUser with the secret of the
// server token, the agent token or the own agent's, each compared in
// constant time (both sides are hashed first so lengths do not leak).
func (h *joinHandler) authorized(r *http.Request) bool {
	user, password, ok := r.BasicAuth()
	if !ok || !constantTimeEqual(user, join.TokenUser) {
		return false
	}
	current := h.tokens.Load()
	match := false
	for _, secret := range []string{current.ServerSecret, current.AgentSecret, h.ownSecret} {
		// Every one is compared, whichever matches.
		match = secret != "" && constantTimeEqual(password, secret) || match
	}
	return match
}

// isOwnAgent reports whether r comes from the server's own agent.
func (h *joinHandler) isOwnAgent(r *http.Request) bool {
	user, password, ok := r.BasicAuth()
	return ok && h.ownSecret != "" && constantTimeEqual(user, join.TokenUser) && constantTimeEqual(password, h.ownSecret)
}

// authorizedAs checks HTTP basic auth against wantUser and the server
// token's secret only.
func (h *joinHandler) authorizedAs(r *http.Request, wantUser string) bool {
	user, password, ok := r.BasicAuth()
	if !ok {
		return false
	}
	userOK := constantTimeEqual(user, wantUser)
	secretOK := constantTimeEqual(password, h.tokens.Load().ServerSecret)
	return userOK && secretOK
}

func constantTimeEqual(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

// checkedCSRs are the parsed CSRs of a request that asks for no more than
// a node may have.
type checkedCSRs struct {
	client, serving *x509.CertificateRequest
	// components are by user, each one of join.ComponentUsers.
	components map[string]*x509.CertificateRequest
}

// checkCertificatesRequest validates the names in req and that each CSR asks
// for exactly what a node NAME may have: its kubelet's client and serving
// certificates, and client certificates for the agent's component users
// (CN=user, no groups, no SANs). It returns the parsed CSRs.
func checkCertificatesRequest(req join.CertificatesRequest) (checkedCSRs, error) {
	var out checkedCSRs
	name := req.NodeName
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return out, fmt.Errorf("node name %q is not valid (%s): choose another with --node-name", name, strings.Join(msgs, "; "))
	}
	if len(join.PasswordSecretName(name)) > validation.DNS1123SubdomainMaxLength {
		return out, fmt.Errorf("node name %q is too long: choose one of at most %d characters with --node-name",
			name, validation.DNS1123SubdomainMaxLength-len(join.PasswordSecretSuffix))
	}
	hostname := req.Hostname
	if hostname == "" {
		hostname = name
	}
	if msgs := validation.IsDNS1123Subdomain(hostname); len(msgs) > 0 {
		return out, fmt.Errorf("hostname %q is not valid (%s)", hostname, strings.Join(msgs, "; "))
	}
	var ips []net.IP
	for _, s := range req.NodeIPs {
		ip := net.ParseIP(s)
		if ip == nil || ip.IsUnspecified() || ip.IsMulticast() {
			return out, fmt.Errorf("node IP %q is not a usable unicast IP address: check --node-ip", s)
		}
		ips = append(ips, ip)
	}
	if req.NodePassword == "" || len(req.NodePassword) > 256 {
		return out, errors.New("the node password must be 1 to 256 characters")
	}
	user := join.NodeUser(name)

	client, err := parseClientCSR("client certificate request", req.ClientCSR, user, []string{join.NodesGroup})
	if err != nil {
		return out, err
	}

	serving, err := pki.ParseCSRPEM([]byte(req.ServingCSR))
	if err != nil {
		return out, fmt.Errorf("serving certificate request: %w", err)
	}
	if err := checkSubject(serving, user, []string{join.NodesGroup}); err != nil {
		return out, fmt.Errorf("serving certificate request: %w", err)
	}
	if len(serving.DNSNames) == 0 && len(serving.IPAddresses) == 0 {
		return out, errors.New("serving certificate request: it names no DNS name or IP address")
	}
	for _, d := range serving.DNSNames {
		if d != hostname && d != name {
			return out, fmt.Errorf("serving certificate request: DNS name %q is neither the node name %q nor the hostname %q", d, name, hostname)
		}
	}
	for _, ip := range serving.IPAddresses {
		if !slices.ContainsFunc(ips, ip.Equal) {
			return out, fmt.Errorf("serving certificate request: IP address %s is not one of the node IPs %v", ip, req.NodeIPs)
		}
	}
	out.client, out.serving = client, serving
	for component, csrPEM := range req.ComponentCSRs {
		if !join.IsComponentUser(component) {
			return out, fmt.Errorf("component certificate request for %q: a node's components are only %s", component, strings.Join(join.ComponentUsers(), ", "))
		}
		csr, err := parseClientCSR("component certificate request for "+component, csrPEM, component, nil)
		if err != nil {
			return out, err
		}
		if out.components == nil {
			out.components = map[string]*x509.CertificateRequest{}
		}
		out.components[component] = csr
	}
	return out, nil
}

// parseClientCSR parses a client certificate request for user in groups,
// with no SANs; what names the request in errors.
func parseClientCSR(what, csrPEM, user string, groups []string) (*x509.CertificateRequest, error) {
	csr, err := pki.ParseCSRPEM([]byte(csrPEM))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := checkSubject(csr, user, groups); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if len(csr.DNSNames) > 0 || len(csr.IPAddresses) > 0 {
		return nil, fmt.Errorf("%s: a client certificate has no DNS names or IP addresses", what)
	}
	return csr, nil
}

func checkSubject(csr *x509.CertificateRequest, user string, groups []string) error {
	if csr.Subject.CommonName != user || !slices.Equal(csr.Subject.Organization, groups) {
		want := "CN=" + user
		if len(groups) > 0 {
			want += ", O=" + strings.Join(groups, ",")
		} else {
			want += " and no O"
		}
		return fmt.Errorf("subject must be %s, got CN=%s, O=%s", want, csr.Subject.CommonName, strings.Join(csr.Subject.Organization, ","))
	}
	return nil
}

// checkNodePassword records password for node on its first join and
// compares it on later ones. It returns 409 when node belongs to another
// agent and 503 when the API cannot be used yet.
func (h *joinHandler) checkNodePassword(ctx context.Context, node, password string) (types.UID, int, error) {
	secrets := h.client.CoreV1().Secrets(join.PasswordSecretNamespace)
	name := join.PasswordSecretName(node)
	for attempt := 0; attempt < 2; attempt++ {
		current, err := secrets.Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			if !passwordMatches(current.Data[join.PasswordHashKey], password) {
				return "", http.StatusConflict, fmt.Errorf("node name %s is already taken by another agent; use --node-name "+
					"or delete the Secret %s/%s", node, join.PasswordSecretNamespace, name)
			}
			return current.UID, http.StatusOK, nil
		}
		if !apierrors.IsNotFound(err) {
			return "", http.StatusServiceUnavailable, fmt.Errorf("cannot read the node password secret %s/%s yet (retry shortly): %w", join.PasswordSecretNamespace, name, err)
		}
		hash, err := hashPassword(password)
		if err != nil {
			return "", http.StatusServiceUnavailable, err
		}
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: join.PasswordSecretNamespace,
				Labels: map[string]string{join.PasswordSecretLabel: "true"}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{join.PasswordHashKey: hash},
		}
		created, err := secrets.Create(ctx, secret, metav1.CreateOptions{FieldManager: "orch-join"})
		if err == nil {
			return created.UID, http.StatusOK, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return "", http.StatusServiceUnavailable, fmt.Errorf("cannot store the node password secret %s/%s yet (the server may still be starting; retry shortly): %w",
				join.PasswordSecretNamespace, name, err)
		}
		// Another join of the same name won the race: compare with its hash.
	}
	return "", http.StatusServiceUnavailable, fmt.Errorf("the node password secret %s/%s keeps changing; retry shortly", join.PasswordSecretNamespace, name)
}

// Node password hashes are "pbkdf2-sha256$ITERATIONS$SALT$HASH" (base64).
const (
	passwordScheme     = "pbkdf2-sha256"
	passwordIterations = 20000
)

func hashPassword(password string) ([]byte, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return nil, fmt.Errorf("generate salt: %w", err)
	}
	sum, err := pbkdf2.Key(sha256.New, password, salt, passwordIterations, sha256.Size)
	if err != nil {
		return nil, err
	}
	enc := base64.RawStdEncoding
	return fmt.Appendf(nil, "%s$%d$%s$%s", passwordScheme, passwordIterations, enc.EncodeToString(salt), enc.EncodeToString(sum)), nil
}

func passwordMatches(stored []byte, password string) bool {
	parts := strings.Split(string(stored), "$")
	if len(parts) != 4 || parts[0] != passwordScheme {
		return false
	}
	iterations, err := strconv.Atoi(parts[1])
	if err != nil || iterations <= 0 || iterations > 10_000_000 {
		return false
	}
	enc := base64.RawStdEncoding
	salt, err1 := enc.DecodeString(parts[2])
	want, err2 := enc.DecodeString(parts[3])
	if err1 != nil || err2 != nil || len(want) != sha256.Size {
		return false
	}
	got, err := pbkdf2.Key(sha256.New, password, salt, iterations, sha256.Size)
	return err == nil && subtle.ConstantTimeCompare(got, want) == 1
}

func writeJoinError(w http.ResponseWriter, code int, reason metav1.StatusReason, message string) {
	filters.WriteStatus(w, metav1.Status{Status: metav1.StatusFailure, Code: int32(code), Reason: reason, Message: message})
}
