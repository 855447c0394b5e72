package bench

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// opTimeout bounds every single request.
const opTimeout = 30 * time.Second

// result is what one phase measured.
type result struct {
	ops     int
	errors  int
	elapsed time.Duration
	lat     []time.Duration // sorted
	errMsgs map[string]int  // distinct error messages (at most a few)
	note    string
}

func (r result) rate() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.ops) / r.elapsed.Seconds()
}

// quantile returns the q-quantile (nearest rank) of the latencies.
func (r result) quantile(q float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(r.lat)))) - 1
	return r.lat[max(0, min(i, len(r.lat)-1))]
}

// errorLog collects error counts and a few distinct messages, safely from
// many goroutines.
type errorLog struct {
	mu   sync.Mutex
	n    int
	msgs map[string]int
}

func (e *errorLog) add(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n++
	if e.msgs == nil {
		e.msgs = map[string]int{}
	}
	msg := err.Error()
	if len(msg) > 400 {
		msg = msg[:400] + "…"
	}
	if _, ok := e.msgs[msg]; ok || len(e.msgs) < 5 {
		e.msgs[msg]++
	}
}

// merge adds the errors of r, their messages prefixed.
func (e *errorLog) merge(prefix string, r result) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n += r.errors
	for msg, n := range r.errMsgs {
		if e.msgs == nil {
			e.msgs = map[string]int{}
		}
		e.msgs[prefix+msg] += n
	}
}

// client is one connection to the server, used through the typed clientset
// and, for the custom resource, the dynamic client.
type client struct {
	*kubernetes.Clientset
	dyn dynamic.Interface
}

// newClients makes n clients for config, each with its own connection (a
// non-nil Proxy func keeps client-go from sharing a cached transport), no
// client-side rate limit, and protobuf as the typed clientset's wire format
// when proto is set (the dynamic client always speaks JSON).
func newClients(config *rest.Config, n int, proto bool) ([]*client, error) {
	out := make([]*client, n)
	for i := range out {
		c := rest.CopyConfig(config)
		c.QPS, c.Burst = -1, 0
		c.Timeout = opTimeout
		c.UserAgent = "orch-bench"
		c.WarningHandler = rest.NoWarnings{}
		c.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil }
		if proto {
			c.ContentType = runtime.ContentTypeProtobuf
			c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
		}
		hc, err := rest.HTTPClientFor(c)
		if err != nil {
			return nil, err
		}
		cs, err := kubernetes.NewForConfigAndClient(c, hc)
		if err != nil {
			return nil, err
		}
		dyn, err := dynamic.NewForConfigAndClient(c, hc)
		if err != nil {
			return nil, err
		}
		// Open the connection (TLS handshake) before any clock starts.
		if _, err := cs.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
			return nil, fmt.Errorf("warm-up request of client %d: %w", i, err)
		}
		out[i] = &client{Clientset: cs, dyn: dyn}
	}
	return out, nil
}

// opFunc is one operation of a phase: c is the client of the goroutine with
// index i, seq the operation's global sequence number.
type opFunc func(ctx context.Context, c *client, i, seq int) error

// runPhase runs op from len(clients) goroutines at once until maxOps
// operations have started or maxDur has passed, whichever is first. op gets
// the client's index and the operation's global sequence number.
func runPhase(clients []*client, maxOps int, maxDur time.Duration, op opFunc) result {
	var (
		next    atomic.Int64
		errs    errorLog
		wg      sync.WaitGroup
		perGo   = make([][]time.Duration, len(clients))
		start   = time.Now()
		endline = start.Add(maxDur)
	)
	for c, cs := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				seq := int(next.Add(1)) - 1
				if seq >= maxOps || time.Now().After(endline) {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
				t0 := time.Now()
				err := op(ctx, cs, c, seq)
				d := time.Since(t0)
				cancel()
				if err != nil {
					errs.add(err)
					continue
				}
				perGo[c] = append(perGo[c], d)
			}
		}()
	}
	wg.Wait()
	r := result{elapsed: time.Since(start), errors: errs.n, errMsgs: errs.msgs}
	r.lat = slices.Concat(perGo...)
	sort.Slice(r.lat, func(i, j int) bool { return r.lat[i] < r.lat[j] })
	r.ops = len(r.lat)
	return r
}
