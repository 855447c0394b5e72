package dns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/sync/singleflight"
)

// maxUDPSize is the EDNS buffer size offered to clients and upstreams
// (DNS flag day 2020).
const maxUDPSize = 1232

// resolvConfCheck is how often the resolv.conf file is checked for changes.
const resolvConfCheck = 5 * time.Second

var errNoUpstream = errors.New("no upstream resolver (none in resolv.conf other than our own addresses)")

// forwarder sends questions outside the zone to upstream resolvers and
// caches their answers.
type forwarder struct {
	log     *slog.Logger
	metrics *metrics
	cache   *answerCache
	udp     *dns.Client
	tcp     *dns.Client
	static  []string // Config.Upstreams
	path    string   // resolv.conf
	own     []string // our listen addresses, never forwarded to

	flight singleflight.Group

	mu      sync.Mutex
	servers []string
	checked time.Time
	modTime time.Time
	size    int64
}

func newForwarder(cfg Config, m *metrics, log *slog.Logger) *forwarder {
	f := &forwarder{
		log: log, metrics: m, cache: newCache(cfg.CacheSize),
		udp:    &dns.Client{Net: "udp", Timeout: cfg.UpstreamTimeout, UDPSize: maxUDPSize},
		tcp:    &dns.Client{Net: "tcp", Timeout: cfg.UpstreamTimeout},
		static: cfg.Upstreams, path: cfg.ResolvConf, own: cfg.Listen,
	}
	if len(f.static) == 0 {
		f.mu.Lock()
		f.reloadLocked(time.Now())
		f.mu.Unlock()
	}
	return f
}

// upstreams are the resolvers to ask, in order.
func (f *forwarder) upstreams() []string {
	if len(f.static) > 0 {
		return f.static
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if now := time.Now(); now.Sub(f.checked) >= resolvConfCheck {
		f.reloadLocked(now)
	}
	return f.servers
}

// reloadLocked re-reads resolv.conf when its size or time changed.
func (f *forwarder) reloadLocked(now time.Time) {
	f.checked = now
	st, err := os.Stat(f.path)
	if err != nil {
		if f.servers != nil || f.modTime.IsZero() {
			f.log.Warn("no upstream resolvers: names outside the cluster get SERVFAIL (fix the file or set the resolv-conf path)", "resolvConf", f.path, "err", err)
		}
		f.servers, f.modTime = nil, time.Unix(1, 0)
		return
	}
	if st.ModTime().Equal(f.modTime) && st.Size() == f.size {
		return
	}
	f.modTime, f.size = st.ModTime(), st.Size()
	cc, err := dns.ClientConfigFromFile(f.path)
	if err != nil {
		f.log.Warn("cannot read upstream resolvers: names outside the cluster get SERVFAIL", "resolvConf", f.path, "err", err)
		f.servers = nil
		return
	}
	f.servers = upstreamsFrom(cc.Servers, cc.Port, f.own, localAddrs())
	if len(f.servers) == 0 {
		f.log.Warn("no upstream resolvers other than ourselves: names outside the cluster get SERVFAIL", "resolvConf", f.path, "nameservers", cc.Servers)
		return
	}
	f.log.Info("upstream resolvers", "resolvConf", f.path, "upstreams", f.servers)
}

// localAddrs are the addresses of this host's interfaces.
func localAddrs() []netip.Addr {
	ifAddrs, _ := net.InterfaceAddrs()
	var out []netip.Addr
	for _, a := range ifAddrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr().Unmap())
		}
	}
	return out
}

// upstreamsFrom are the nameservers as host:port, less those that are one
// of our own listen addresses (a loop). A wildcard listen address is all
// of local and the loopback addresses.
func upstreamsFrom(nameservers []string, port string, own []string, local []netip.Addr) []string {
	var out []string
	for _, ns := range nameservers {
		ip, err := netip.ParseAddr(ns)
		if err != nil {
			continue
		}
		ip = ip.Unmap()
		if !isOwn(ip.WithZone(""), port, own, local) {
			out = append(out, net.JoinHostPort(ns, port))
		}
	}
	return out
}

func isOwn(ip netip.Addr, port string, own []string, local []netip.Addr) bool {
	for _, o := range own {
		h, p, err := net.SplitHostPort(o)
		if err != nil || p != port {
			continue
		}
		if h == "" {
			h = "::"
		}
		oip, err := netip.ParseAddr(h)
		if err != nil {
			continue
		}
		oip = oip.Unmap()
		if oip == ip {
			return true
		}
		if oip.IsUnspecified() && (ip.IsLoopback() || ip.IsUnspecified() || containsAddr(local, ip)) {
			return true
		}
	}
	return false
}

func containsAddr(list []netip.Addr, a netip.Addr) bool {
	for _, l := range list {
		if l == a {
			return true
		}
	}
	return false
}

// forward answers q from the cache or the upstreams; SERVFAIL when all
// upstreams fail. The reply is the caller's to change.
func (f *forwarder) forward(ctx context.Context, q dns.Question, cd bool) (*dns.Msg, string) {
	key := cacheKey{name: strings.ToLower(q.Name), qtype: q.Qtype, cd: cd}
	if m, ok := f.cache.get(key); ok {
		f.metrics.cacheHits.Inc()
		return m, sourceCache
	}
	f.metrics.cacheMisses.Inc()
	// Concurrent misses of one question share one upstream exchange.
	flight := fmt.Sprintf("%s/%d/%t", key.name, key.qtype, key.cd)
	v, err, _ := f.flight.Do(flight, func() (any, error) {
		req := new(dns.Msg)
		req.SetQuestion(key.name, q.Qtype)
		req.CheckingDisabled = cd
		req.SetEdns0(maxUDPSize, false)
		r, err := f.exchange(ctx, req)
		if err != nil {
			return nil, err
		}
		extra := r.Extra[:0]
		for _, rr := range r.Extra {
			if rr.Header().Rrtype != dns.TypeOPT {
				extra = append(extra, rr)
			}
		}
		r.Extra = extra
		f.cache.put(key, r)
		return r, nil
	})
	if err != nil {
		f.log.Debug("forward failed", "name", key.name, "type", dns.TypeToString[q.Qtype], "err", err)
		m := new(dns.Msg)
		m.SetQuestion(key.name, q.Qtype)
		m.Response, m.Rcode = true, dns.RcodeServerFailure
		return m, sourceForward
	}
	return v.(*dns.Msg).Copy(), sourceForward // callers change their copy
}

// exchange asks each upstream in turn until one answers.
func (f *forwarder) exchange(ctx context.Context, req *dns.Msg) (*dns.Msg, error) {
	servers := f.upstreams()
	if len(servers) == 0 {
		return nil, errNoUpstream
	}
	var errs []error
	for _, srv := range servers {
		r, err := f.exchangeOne(ctx, req, srv)
		if err == nil {
			return r, nil
		}
		f.metrics.forwardErrors.WithLabelValues(srv).Inc()
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// exchangeOne asks srv over UDP, and again over TCP when the answer is
// truncated.
func (f *forwarder) exchangeOne(ctx context.Context, req *dns.Msg, srv string) (*dns.Msg, error) {
	r, _, err := f.udp.ExchangeContext(ctx, req, srv)
	if err == nil && r.Truncated {
		r, _, err = f.tcp.ExchangeContext(ctx, req, srv)
	}
	if err != nil {
		return nil, fmt.Errorf("upstream %s: %w", srv, err)
	}
	q := req.Question[0]
	if len(r.Question) != 1 || !strings.EqualFold(r.Question[0].Name, q.Name) || r.Question[0].Qtype != q.Qtype {
		return nil, fmt.Errorf("upstream %s answered another question", srv)
	}
	switch r.Rcode {
	case dns.RcodeServerFailure, dns.RcodeRefused, dns.RcodeNotImplemented, dns.RcodeFormatError:
		return nil, fmt.Errorf("upstream %s answered %s", srv, dns.RcodeToString[r.Rcode])
	}
	return r, nil
}
