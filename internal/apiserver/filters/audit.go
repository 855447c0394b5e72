package filters

import (
	"fmt"
	"io"
	"net/http"
	"os"

	"gopkg.in/natefinch/lumberjack.v2"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/audit"
	auditpolicy "k8s.io/apiserver/pkg/audit/policy"
	"k8s.io/apiserver/pkg/authentication/user"
	genericfilters "k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/endpoints/request"
	auditlog "k8s.io/apiserver/plugin/pkg/audit/log"
)

// AuditConfig is upstream's audit log: --audit-policy-file and
// --audit-log-path (a file, or "-" for standard output) with the
// rotation of --audit-log-maxage (days), -maxbackup and -maxsize (MB).
type AuditConfig struct {
	PolicyFile string
	Path       string
	MaxAge     int
	MaxBackup  int
	MaxSize    int
}

// Auditor writes audit events; nil audits nothing.
type Auditor struct {
	sink   audit.Backend
	policy audit.PolicyRuleEvaluator
	closer io.Closer
}

// NewAuditor reads the policy and opens the log, as kube-apiserver does:
// no policy file or no path is no audit log.
func NewAuditor(cfg AuditConfig) (*Auditor, error) {
	if cfg.PolicyFile == "" || cfg.Path == "" {
		return nil, nil
	}
	policy, err := auditpolicy.LoadPolicyFromFile(cfg.PolicyFile)
	if err != nil {
		return nil, fmt.Errorf("--audit-policy-file: %w", err)
	}
	var out io.Writer = os.Stdout
	var closer io.Closer
	if cfg.Path != "-" {
		f, err := os.OpenFile(cfg.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("--audit-log-path: %w", err)
		}
		f.Close()
		rotating := &lumberjack.Logger{Filename: cfg.Path, MaxAge: cfg.MaxAge, MaxBackups: cfg.MaxBackup, MaxSize: cfg.MaxSize}
		out, closer = rotating, rotating
	}
	return &Auditor{sink: auditlog.NewBackend(out, auditlog.FormatJson, auditv1.SchemeGroupVersion),
		policy: auditpolicy.NewPolicyRuleEvaluator(policy), closer: closer}, nil
}

// Close closes the log file.
func (a *Auditor) Close() error {
	if a == nil || a.closer == nil {
		return nil
	}
	return a.closer.Close()
}

// Audit writes an audit event (audit.k8s.io/v1) for each stage of every
// request the policy selects, at the level it gives, with k8s.io/apiserver's
// own filter: the user, verb, resource, response code and annotations
// (authorization, admission), and at the Request and RequestResponse
// levels the objects the handlers log (audit.LogRequestObject). It runs
// after Authenticate; a nil a audits nothing.
func Audit(a *Auditor, next http.Handler) http.Handler {
	if a == nil {
		return next
	}
	h := genericfilters.WithAudit(next, a.sink, a.policy, isLongRunning)
	h = withUpstreamUser(h)
	h = genericfilters.WithRequestInfo(h, requestInfos)
	return genericfilters.WithAuditInit(h)
}

// AuditFailures is Authenticate's failed hook that audits each refused
// credential as upstream does: an event with no user, the response code
// 401 and the message "Authentication failed, attempted: …". A nil a
// audits nothing.
func AuditFailures(a *Auditor) func(http.Handler) http.Handler {
	if a == nil {
		return nil
	}
	return func(unauthorized http.Handler) http.Handler {
		h := genericfilters.WithFailedAuthenticationAudit(unauthorized, a.sink, a.policy)
		h = genericfilters.WithRequestInfo(h, requestInfos)
		return genericfilters.WithAuditInit(h)
	}
}

// withUpstreamUser puts the authenticated user where k8s.io/apiserver's
// filters look for it.
func withUpstreamUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, ok := UserFrom(r.Context()); ok {
			r = r.WithContext(request.WithUser(r.Context(), &user.DefaultInfo{Name: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}))
		}
		next.ServeHTTP(w, r)
	})
}
