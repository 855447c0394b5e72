package ingress

import (
	"fmt"
	"maps"

	"orch/internal/gateway"
	"orch/internal/routing"
)

// portPlan is what one listening port serves.
type portPlan struct {
	tls      bool
	rules    []*routing.Rule
	fallback *routing.Rule
	// certs maps a host (or "*.domain") to the Secret (namespace/name) of
	// its certificate; "" is the port's default certificate (else a
	// self-signed one).
	certs map[string]string
	// gatewayHosts are the hostnames of the Gateway listeners on the
	// port: the Ingresses' default backend does not answer them.
	gatewayHosts []string
}

// plan decides the ports to listen on and what each serves: the Ingress
// ports (once the orch IngressClass exists) with the Ingresses' rules,
// and the ports of the Gateways' listeners with their HTTPRoutes' rules.
// A Gateway listener on an Ingress port shares it when both are plain
// HTTP or both TLS (the Ingresses' certificate wins a host both name,
// and their default backend does not answer the listeners' hostnames);
// otherwise the Ingresses keep the port and the conflict comes back as
// an error.
func plan(cfg Config, ing *Routes, ingressOn bool, gw *gateway.Result) (map[int]*portPlan, []error) {
	out := map[int]*portPlan{}
	if ingressOn {
		if cfg.HTTPPort > 0 {
			out[cfg.HTTPPort] = &portPlan{rules: ing.Rules, fallback: ing.Fallback, certs: map[string]string{}}
		}
		if cfg.HTTPSPort > 0 {
			out[cfg.HTTPSPort] = &portPlan{tls: true, rules: ing.Rules, fallback: ing.Fallback, certs: maps.Clone(ing.TLS)}
		}
	}
	if gw == nil {
		return out, nil
	}
	var errs []error
	for port, gp := range gw.Ports {
		p := out[int(port)]
		switch {
		case p == nil:
			out[int(port)] = &portPlan{tls: gp.TLS, rules: gp.Rules, certs: maps.Clone(gp.Certs), gatewayHosts: gp.Hosts}
			continue
		case p.tls != gp.TLS:
			errs = append(errs, fmt.Errorf("a Gateway listener on port %d is not served: the Ingresses serve that port with the other protocol", port))
			continue
		}
		p.rules = append(append([]*routing.Rule(nil), p.rules...), gp.Rules...)
		p.gatewayHosts = gp.Hosts
		for h, s := range gp.Certs {
			if _, taken := p.certs[h]; !taken {
				p.certs[h] = s
			}
		}
	}
	return out, errs
}
