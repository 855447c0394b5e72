package filters

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Timeout ends a request that is not long-running (not a watch, exec,
// attach, port-forward, log or proxy) after limit, or after its ?timeout=
// when that is shorter, as upstream's --request-timeout (default 60 s):
// its context is cancelled and, unless the handler has begun to answer,
// the client gets 504 with upstream's Status. 0 is no limit.
func Timeout(limit time.Duration, next http.Handler) http.Handler {
	if limit <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, long := classify(r); long {
			next.ServeHTTP(w, r)
			return
		}
		d := limit
		if q := r.URL.Query().Get("timeout"); q != "" {
			asked, err := time.ParseDuration(q)
			if err != nil {
				writeJSONStatus(w, metav1.Status{Status: metav1.StatusFailure, Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest,
					Message: fmt.Sprintf("invalid timeout specified in the request URL: %v", err)})
				return
			}
			if asked > 0 && asked < d {
				d = asked
			}
		}
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		tw := &timeoutWriter{w: w, header: http.Header{}, ctx: ctx}
		done := make(chan any, 1)
		go func() {
			defer func() {
				v := recover()
				done <- v
			}()
			next.ServeHTTP(tw, r.WithContext(ctx))
		}()
		select {
		case v := <-done:
			if v != nil {
				panic(v) // Recover, outside, answers it
			}
			if !tw.timeOut() {
				return
			}
		case <-ctx.Done():
			if !tw.timeOut() {
				// The answer had begun: all that is left is to cut it.
				panic(http.ErrAbortHandler)
			}
		}
		writeJSONStatus(w, metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGatewayTimeout, Reason: metav1.StatusReasonTimeout,
			Message: "Timeout: request did not complete within requested timeout - context deadline exceeded", Details: &metav1.StatusDetails{}})
	})
}

// timeoutWriter passes the handler's answer on until the request times
// out; from then on it drops what the handler still writes.
type timeoutWriter struct {
	ctx      context.Context // the request's, with its deadline
	mu       sync.Mutex
	w        http.ResponseWriter
	header   http.Header
	wrote    bool
	timedOut bool
}

func (t *timeoutWriter) Header() http.Header { return t.header }

func (t *timeoutWriter) WriteHeader(code int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.writeHeaderLocked(code)
}

func (t *timeoutWriter) writeHeaderLocked(code int) {
	t.expireLocked()
	if t.wrote || t.timedOut {
		return
	}
	t.wrote = true
	for k, v := range t.header {
		t.w.Header()[k] = v
	}
	t.w.WriteHeader(code)
}

func (t *timeoutWriter) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.writeHeaderLocked(http.StatusOK)
	if t.timedOut {
		return 0, http.ErrHandlerTimeout
	}
	return t.w.Write(b)
}

func (t *timeoutWriter) Flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.writeHeaderLocked(http.StatusOK)
	if f, ok := t.w.(http.Flusher); ok && !t.timedOut {
		f.Flush()
	}
}

// expireLocked marks the request timed out once its deadline has passed
// and nothing has been written: what the handler writes after that is too
// late.
func (t *timeoutWriter) expireLocked() {
	if !t.wrote && t.ctx.Err() == context.DeadlineExceeded {
		t.timedOut = true
	}
}

// timeOut is true when the request timed out before the handler began its
// answer (which the 504 then is); false when it has begun one.
func (t *timeoutWriter) timeOut() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expireLocked()
	return t.timedOut
}

// writeJSONStatus writes status, with its details, as JSON.
func writeJSONStatus(w http.ResponseWriter, status metav1.Status) {
	status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	body, _ := json.Marshal(status)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(status.Code))
	w.Write(append(body, '\n'))
}
