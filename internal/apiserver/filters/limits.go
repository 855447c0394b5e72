package filters

import (
	"net/http"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// Limits are how many requests may be served at once, as upstream's
// --max-requests-inflight (ReadOnly, default 400) and
// --max-mutating-requests-inflight (Mutating, default 200); 0 is no limit.
type Limits struct {
	ReadOnly, Mutating int
}

// requestInfos parses paths the way upstream's filters do.
var requestInfos = &request.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

// longRunning are the subresources whose requests last as long as a
// client keeps them (with watches, they are not counted).
var longRunning = []string{"proxy", "attach", "exec", "log", "portforward"}

var mutatingVerbs = []string{"create", "update", "patch", "delete", "deletecollection"}

// classify parses r's path as upstream's filters do; long is true for a
// long-running request (or one whose path does not parse, which the
// handlers refuse), which no limit or timeout applies to.
func classify(r *http.Request) (info *request.RequestInfo, long bool) {
	info, err := requestInfos.NewRequestInfo(r)
	return info, err != nil || isLongRunning(r, info)
}

// isLongRunning is a watch or a long-running subresource.
func isLongRunning(_ *http.Request, info *request.RequestInfo) bool {
	return info != nil && (info.Verb == "watch" || (info.IsResourceRequest && slices.Contains(longRunning, info.Subresource)))
}

// MaxInFlight answers 429 Too Many Requests, with Retry-After, to a
// request that would pass its kind's limit, as upstream's
// WithMaxInFlightLimit: it never queues, so overload cannot hang a client.
// Long-running requests are not counted, nor are those of system:masters,
// so an admin can still act on an overloaded server. It runs after
// Authenticate.
func MaxInFlight(limits Limits, next http.Handler) http.Handler {
	readOnly, mutating := slots(limits.ReadOnly), slots(limits.Mutating)
	if readOnly == nil && mutating == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, long := classify(r)
		if long {
			next.ServeHTTP(w, r)
			return
		}
		if u, ok := UserFrom(r.Context()); ok && slices.Contains(u.Groups, "system:masters") {
			next.ServeHTTP(w, r)
			return
		}
		c := readOnly
		if slices.Contains(mutatingVerbs, info.Verb) {
			c = mutating
		}
		if c == nil {
			next.ServeHTTP(w, r)
			return
		}
		select {
		case c <- struct{}{}:
			defer func() { <-c }()
			next.ServeHTTP(w, r)
		default:
			tooManyRequests(w)
		}
	})
}

func slots(n int) chan struct{} {
	if n <= 0 {
		return nil
	}
	return make(chan struct{}, n)
}

// tooManyRequests is upstream's answer to a request over the limit.
func tooManyRequests(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	writeJSONStatus(w, metav1.Status{Status: metav1.StatusFailure, Message: "Too many requests, please try again later.",
		Reason: metav1.StatusReasonTooManyRequests, Details: &metav1.StatusDetails{RetryAfterSeconds: 1}, Code: http.StatusTooManyRequests})
}
