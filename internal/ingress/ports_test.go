package ingress

import (
	"testing"

	"orch/internal/gateway"
	"orch/internal/routing"
)

func TestPlan(t *testing.T) {
	ing := &Routes{Rules: []*routing.Rule{{Host: "ing.example"}}, Fallback: &routing.Rule{}, TLS: map[string]string{"ing.example": "default/ing"}}
	gw := &gateway.Result{Ports: map[int32]*gateway.Port{
		80:   {Rules: []*routing.Rule{{Host: "gw.example"}}, Hosts: []string{"gw.example"}},
		443:  {TLS: true, Rules: []*routing.Rule{{Host: "gw.example"}}, Certs: map[string]string{"gw.example": "default/gw", "ing.example": "default/other"}},
		8080: {Rules: []*routing.Rule{{Host: "alt.example"}}},
		8443: {Rules: []*routing.Rule{{Host: "clash.example"}}},
	}}
	cfg := Config{HTTPPort: 80, HTTPSPort: 8443}
	plans, errs := plan(cfg, ing, true, gw)
	if len(errs) != 1 {
		t.Errorf("errors %v, want one: port 8443 is the Ingresses' TLS port and the Gateway's plain HTTP", errs)
	}
	hosts := func(p *portPlan) []string {
		var out []string
		for _, r := range p.rules {
			out = append(out, r.Host)
		}
		return out
	}
	if p := plans[80]; p == nil || p.tls || len(p.rules) != 2 || p.fallback == nil || len(p.gatewayHosts) != 1 {
		t.Errorf("port 80: %+v, want the Ingresses' rules and fallback, the Gateway's rule and its listener's host", p)
	}
	if p := plans[8443]; p == nil || !p.tls || len(p.rules) != 1 || p.certs["ing.example"] != "default/ing" {
		t.Errorf("port 8443: %+v (hosts %v), want the Ingresses' alone", p, hosts(p))
	}
	if p := plans[443]; p == nil || !p.tls || p.fallback != nil || p.certs["gw.example"] != "default/gw" {
		t.Errorf("port 443: %+v, want the Gateway's alone", p)
	}
	if p := plans[8080]; p == nil || len(p.rules) != 1 {
		t.Errorf("port 8080: %+v", p)
	}
	// A shared TLS port: the Ingress's certificate wins its host.
	plans, _ = plan(Config{HTTPSPort: 443}, ing, true, gw)
	if p := plans[443]; p.certs["ing.example"] != "default/ing" || p.certs["gw.example"] != "default/gw" || len(p.rules) != 2 {
		t.Errorf("shared port 443: %+v", p)
	}
	if len(ing.TLS) != 1 {
		t.Errorf("plan changed the Ingresses' TLS map: %v", ing.TLS)
	}
	// Without the IngressClass the Ingress ports are not listened on.
	plans, _ = plan(cfg, ing, false, nil)
	if len(plans) != 0 {
		t.Errorf("plans %v without the class and Gateways, want none", plans)
	}
}
