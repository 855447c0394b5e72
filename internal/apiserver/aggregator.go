package apiserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"orch/internal/apiserver/authz"
	"orch/internal/apiserver/filters"
)

// AggregationConfig lets the server proxy the group versions of
// APIServices with a service to extension API servers.
type AggregationConfig struct {
	// ClientCAPEM is the CA of the client certificates the server accepts
	// (published as client-ca-file).
	ClientCAPEM []byte
	// RequestHeaderCAPEM signs ProxyClient; extension servers trust the
	// user headers of requests presenting a certificate it signed
	// (requestheader-client-ca-file).
	RequestHeaderCAPEM []byte
	// ProxyClient is the certificate the server presents to extension
	// servers; its common name is the one requestheader-allowed-names lists.
	ProxyClient tls.Certificate
}

// The headers the front proxy passes the user in, as upstream's
// (--requestheader-*-headers defaults of kubeadm and k3s).
const (
	remoteUserHeader        = "X-Remote-User"
	remoteUIDHeader         = "X-Remote-Uid"
	remoteGroupHeader       = "X-Remote-Group"
	remoteExtraHeaderPrefix = "X-Remote-Extra-"
)

var apiServiceResource = apiregistrationv1.SchemeGroupVersion.WithResource("apiservices")

// aggregator knows the APIServices (fed from their watch cache) and
// proxies the group versions served elsewhere.
type aggregator struct {
	s   *Server
	cfg *AggregationConfig

	mu     sync.RWMutex
	remote map[schema.GroupVersion]*apiregistrationv1.APIService
	byName map[string]*apiregistrationv1.APIService
	// discovery is what each remote group version last said it serves.
	discovery map[schema.GroupVersion]*apidiscoveryv2.APIVersionDiscovery
	// remotes counts remote group versions, so that requests skip the
	// lookup while there are none.
	remotes atomic.Int32
	// changed wakes the availability checks.
	changed chan struct{}
}

func newAggregator(s *Server, cfg *AggregationConfig) *aggregator {
	return &aggregator{s: s, cfg: cfg, remote: map[schema.GroupVersion]*apiregistrationv1.APIService{},
		byName: map[string]*apiregistrationv1.APIService{}, discovery: map[schema.GroupVersion]*apidiscoveryv2.APIVersionDiscovery{},
		changed: make(chan struct{}, 1)}
}

// Update takes an APIService as it is now (the feed's sink).
func (a *aggregator) Update(obj any) { a.set(obj, true) }

// Delete forgets an APIService.
func (a *aggregator) Delete(obj any) { a.set(obj, false) }

func (a *aggregator) set(obj any, present bool) {
	svc, ok := obj.(*apiregistrationv1.APIService)
	if !ok {
		return
	}
	gv := groupVersionOf(svc)
	a.mu.Lock()
	if old, ok := a.byName[svc.Name]; ok {
		oldGV := groupVersionOf(old)
		if a.remote[oldGV] == old {
			delete(a.remote, oldGV)
			// What it served stands while it still serves it (a status
			// change), until it has answered again otherwise.
			if !present || oldGV != gv || svc.Spec.Service == nil {
				delete(a.discovery, oldGV)
			}
		}
		delete(a.byName, svc.Name)
	}
	if present {
		a.byName[svc.Name] = svc
		if svc.Spec.Service != nil {
			a.remote[gv] = svc
		}
	}
	a.remotes.Store(int32(len(a.remote)))
	a.mu.Unlock()
	a.kick()
}

func (a *aggregator) kick() {
	select {
	case a.changed <- struct{}{}:
	default:
	}
}

func groupVersionOf(svc *apiregistrationv1.APIService) schema.GroupVersion {
	return schema.GroupVersion{Group: svc.Spec.Group, Version: svc.Spec.Version}
}

// remoteFor is the APIService serving the group version of path
// (/apis/GROUP/VERSION...), if one with a service does.
func (a *aggregator) remoteFor(path string) (*apiregistrationv1.APIService, bool) {
	if a == nil || a.remotes.Load() == 0 {
		return nil, false
	}
	rest, ok := strings.CutPrefix(path, "/apis/")
	if !ok {
		return nil, false
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return nil, false
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	svc, ok := a.remote[schema.GroupVersion{Group: parts[0], Version: parts[1]}]
	return svc, ok
}

// remoteGroups are the remote group versions with what they serve (nil
// until their discovery has been read).
func (a *aggregator) remoteGroups() map[schema.GroupVersion]*apidiscoveryv2.APIVersionDiscovery {
	if a == nil || a.remotes.Load() == 0 {
		return nil
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	out := make(map[schema.GroupVersion]*apidiscoveryv2.APIVersionDiscovery, len(a.remote))
	for gv := range a.remote {
		out[gv] = a.discovery[gv]
	}
	return out
}

// proxy passes r on to the extension server of svc as the requesting user.
func (a *aggregator) proxy(w http.ResponseWriter, r *http.Request, svc *apiregistrationv1.APIService) {
	user, _ := filters.UserFrom(r.Context())
	target, transport, err := a.backend(r.Context(), svc)
	if err != nil {
		a.s.respondError(w, r, apierrors.NewServiceUnavailable(err.Error()), schema.GroupResource{}, "")
		return
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.URL.Path, pr.Out.URL.RawPath = r.URL.Path, r.URL.RawPath
			pr.Out.Host = ""
			setUserHeaders(pr.Out.Header, user)
		},
		Transport:     transport,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, req *http.Request, err error) {
			a.s.log.Debug("aggregated API unreachable", "apiservice", svc.Name, "err", err)
			a.s.respondError(w, req, apierrors.NewServiceUnavailable(fmt.Sprintf("error trying to reach service: %v", err)), schema.GroupResource{}, "")
		},
	}
	rp.ServeHTTP(w, r)
}

// setUserHeaders replaces every credential and user header of h with the
// front proxy's user headers for user.
func setUserHeaders(h http.Header, user authz.User) {
	h.Del("Authorization")
	for k := range h {
		if strings.HasPrefix(k, "Impersonate-") || strings.HasPrefix(http.CanonicalHeaderKey(k), "X-Remote-") {
			h.Del(k)
		}
	}
	h.Set(remoteUserHeader, user.Name)
	if user.UID != "" {
		h.Set(remoteUIDHeader, user.UID)
	}
	for _, g := range user.Groups {
		h.Add(remoteGroupHeader, g)
	}
	for k, vs := range user.Extra {
		for _, v := range vs {
			h.Add(remoteExtraHeaderPrefix+url.PathEscape(k), v)
		}
	}
}

// backend is where svc's requests go now (one of its service's ready
// endpoints) and the transport that reaches it: TLS checked against its
// caBundle (or not at all with insecureSkipTLSVerify), presenting the
// front proxy's certificate.
func (a *aggregator) backend(ctx context.Context, svc *apiregistrationv1.APIService) (*url.URL, http.RoundTripper, error) {
	ref := svc.Spec.Service
	port := int32(443)
	if ref.Port != nil {
		port = *ref.Port
	}
	target, serverName, err := a.s.webhookAddress(ctx, webhookTarget{Namespace: ref.Namespace, Service: ref.Name, Port: port})
	if err != nil {
		return nil, nil, err
	}
	tlsConfig := &tls.Config{ServerName: serverName, MinVersion: tls.VersionTLS12, InsecureSkipVerify: svc.Spec.InsecureSkipTLSVerify}
	if len(svc.Spec.CABundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(svc.Spec.CABundle) {
			return nil, nil, fmt.Errorf("the caBundle of apiservice %s holds no PEM certificate", svc.Name)
		}
		tlsConfig.RootCAs = pool
	}
	if a.cfg != nil {
		tlsConfig.Certificates = []tls.Certificate{a.cfg.ProxyClient}
	}
	dialer := &net.Dialer{}
	// One connection per request: the endpoint is chosen again each time.
	return target, &http.Transport{TLSClientConfig: tlsConfig, ForceAttemptHTTP2: true, DialContext: dialer.DialContext, DisableKeepAlives: true}, nil
}

// The ConfigMap extension API servers read to learn whom to trust, as
// upstream's cluster authentication trust controller writes it.
const (
	authenticationInfoNamespace = "kube-system"
	authenticationInfoName      = "extension-apiserver-authentication"
)

// authenticationInfo is the ConfigMap's data for cfg.
func authenticationInfo(cfg *AggregationConfig) map[string]string {
	return map[string]string{
		"client-ca-file":                     string(cfg.ClientCAPEM),
		"requestheader-client-ca-file":       string(cfg.RequestHeaderCAPEM),
		"requestheader-allowed-names":        `["` + proxyClientName(cfg) + `"]`,
		"requestheader-username-headers":     `["` + remoteUserHeader + `"]`,
		"requestheader-uid-headers":          `["` + remoteUIDHeader + `"]`,
		"requestheader-group-headers":        `["` + remoteGroupHeader + `"]`,
		"requestheader-extra-headers-prefix": `["` + remoteExtraHeaderPrefix + `"]`,
	}
}

func proxyClientName(cfg *AggregationConfig) string {
	if len(cfg.ProxyClient.Certificate) == 0 {
		return ""
	}
	leaf, err := x509.ParseCertificate(cfg.ProxyClient.Certificate[0])
	if err != nil {
		return ""
	}
	return leaf.Subject.CommonName
}

// publishAuthenticationInfo keeps the extension-apiserver-authentication
// ConfigMap as cfg says until ctx ends (it is written again if changed or
// deleted).
func (s *Server) publishAuthenticationInfo(ctx context.Context, cfg *AggregationConfig) {
	client, err := kubernetes.NewForConfig(s.loopbackConfig())
	if err != nil {
		s.log.Error("cannot publish the front proxy's authentication info", "err", err)
		return
	}
	want := authenticationInfo(cfg)
	wait := time.Second
	for {
		err := ensureConfigMap(ctx, client, want)
		if err == nil {
			wait = availabilityInterval
		} else if ctx.Err() == nil {
			s.log.Debug("cannot publish the front proxy's authentication info yet", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

func ensureConfigMap(ctx context.Context, client kubernetes.Interface, data map[string]string) error {
	cms := client.CoreV1().ConfigMaps(authenticationInfoNamespace)
	cm, err := cms.Get(ctx, authenticationInfoName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: authenticationInfoName}, Data: data}, metav1.CreateOptions{})
		return err
	}
	if err != nil || maps.Equal(cm.Data, data) {
		return err
	}
	cm.Data = data
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}
