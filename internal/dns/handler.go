package dns

import (
	"context"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"
)

var _ dns.Handler = (*Server)(nil)

// maxChase bounds the CNAME chain followed for an ExternalName service.
const maxChase = 8

// ServeDNS answers one query; it implements dns.Handler.
func (s *Server) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	start := time.Now()
	_, tcp := w.RemoteAddr().(*net.TCPAddr)
	ctx, cancel := context.WithTimeout(s.baseContext(), queryTimeout)
	defer cancel()
	reply, source := s.handle(ctx, req, tcp)
	if reply == nil {
		return
	}
	var qtype uint16
	if len(req.Question) > 0 {
		qtype = req.Question[0].Qtype
	}
	// Counted before the write, so that a client that has its answer sees it counted.
	s.metrics.observe(qtype, reply.Rcode, source, time.Since(start))
	if err := w.WriteMsg(reply); err != nil {
		s.log.Debug("cannot write DNS reply", "client", w.RemoteAddr(), "err", err)
	}
}

// handle computes the reply to req, or nil to drop it (req is a response).
// tcp tells how big the reply may be.
func (s *Server) handle(ctx context.Context, req *dns.Msg, tcp bool) (*dns.Msg, string) {
	if req.Response {
		return nil, ""
	}
	m := new(dns.Msg)
	switch {
	case req.Opcode != dns.OpcodeQuery:
		return s.finish(req, m.SetRcode(req, dns.RcodeNotImplemented), tcp), sourceError
	case len(req.Question) != 1:
		return s.finish(req, m.SetRcodeFormatError(req), tcp), sourceError
	case req.IsEdns0() != nil && req.IsEdns0().Version() != 0:
		return s.finish(req, m.SetRcode(req, dns.RcodeBadVers), tcp), sourceError
	case req.Question[0].Qclass != dns.ClassINET:
		return s.finish(req, m.SetRcode(req, dns.RcodeRefused), tcp), sourceError
	}
	q := req.Question[0]
	lname := strings.ToLower(q.Name)
	if s.zone.contains(lname) {
		if !s.synced.Load() {
			return s.finish(req, m.SetRcode(req, dns.RcodeServerFailure), tcp), sourceCluster
		}
		return s.finish(req, s.answerZone(ctx, req, q, lname), tcp), sourceCluster
	}
	if q.Qtype == dns.TypePTR && s.synced.Load() {
		if a, ok := parseReverse(lname); ok {
			if rrs := s.zone.ptr(q.Name, a); len(rrs) > 0 {
				m.SetReply(req)
				m.Authoritative = true
				m.Answer = rrs
				return s.finish(req, m, tcp), sourceCluster
			}
		}
	}
	m, source := s.fwd.forward(ctx, q, req.CheckingDisabled)
	if q.Name != lname {
		for _, rr := range m.Answer {
			if h := rr.Header(); h.Name == lname {
				h.Name = q.Name
			}
		}
	}
	m.Authoritative = false
	return s.finish(req, m, tcp), source
}

// answerZone answers q, a name of the cluster zone.
func (s *Server) answerZone(ctx context.Context, req *dns.Msg, q dns.Question, lname string) *dns.Msg {
	r := s.zone.lookup(q.Name, lname, q.Qtype)
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	m.Rcode = r.rcode
	m.Answer, m.Extra = r.answer, r.extra
	if r.cname != "" && q.Qtype != dns.TypeCNAME {
		m.Answer = append(m.Answer, s.chase(ctx, r.cname, q.Qtype, []string{lname})...)
	}
	if len(m.Answer) == 0 {
		m.Ns = []dns.RR{s.zone.soa()}
	}
	return m
}

// chase resolves the target of an ExternalName CNAME, in the zone or
// through the forwarder (and so its cache). Failures give no records: the
// client still has the CNAME and may resolve it itself. seen are the names
// of the chain so far: a loop ends it.
func (s *Server) chase(ctx context.Context, target string, qtype uint16, seen []string) []dns.RR {
	if len(seen) > maxChase || slices.Contains(seen, target) {
		return nil
	}
	if s.zone.contains(target) {
		r := s.zone.lookup(target, target, qtype)
		if r.cname != "" {
			return append(r.answer, s.chase(ctx, r.cname, qtype, append(seen, target))...)
		}
		return r.answer
	}
	m, _ := s.fwd.forward(ctx, dns.Question{Name: target, Qtype: qtype, Qclass: dns.ClassINET}, false)
	if m.Rcode != dns.RcodeSuccess {
		return nil
	}
	return m.Answer
}

// finish makes m the reply to req: header, question, EDNS and a size that
// fits the transport.
func (s *Server) finish(req, m *dns.Msg, tcp bool) *dns.Msg {
	m.Id = req.Id
	m.Response = true
	m.Opcode = req.Opcode
	m.RecursionDesired = req.RecursionDesired
	m.RecursionAvailable = true
	m.CheckingDisabled = req.CheckingDisabled
	m.Question = nil
	if len(req.Question) > 0 {
		m.Question = []dns.Question{req.Question[0]}
	}
	size := dns.MinMsgSize
	if opt := req.IsEdns0(); opt != nil {
		m.SetEdns0(maxUDPSize, false)
		size = max(int(opt.UDPSize()), dns.MinMsgSize)
	}
	if tcp {
		size = dns.MaxMsgSize
	}
	m.Truncate(size)
	return m
}
