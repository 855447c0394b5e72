package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"k8s.io/client-go/kubernetes"

	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"orch/internal/cidr"
	"orch/internal/dns"
	"orch/internal/ingress"
	"orch/internal/join"
	"orch/internal/kubelet/metrics"
	"orch/internal/netpol"
	"orch/internal/network"
	"orch/internal/proxy"
	"orch/internal/run"
)

// clusterNetwork is the node's part of the cluster network: routes to the
// other nodes' pods and masquerade (network.Router), the Service proxy
// (proxy.Proxier, unless --disable-proxy), NetworkPolicy enforcement
// (netpol.Enforcer, unless --disable-network-policy), the Ingress
// controller (ingress.Server, on the Ingress ports) and the cluster DNS, which
// answers on the pod network's gateway once cni knows the node's podCIDR.
// Each acts under its own identity (see componentClient).
func clusterNetwork(c checked, cluster join.Cluster, creds *join.Credentials, cni *network.CNIConfigWriter, km *metrics.Kubelet, log *slog.Logger) ([]run.Named, error) {
	routesClient, err := componentClient(creds, join.NetworkUser, "pod routes", log)
	if err != nil {
		return nil, err
	}
	router, err := network.NewRouter(network.RouteConfig{
		NodeName: c.NodeName, NodeIP: c.ips[0], Backend: c.NetworkBackend, ClusterCIDR: cluster.ClusterCIDR,
	}, routesClient, log)
	if err != nil {
		return nil, err
	}
	parts := []run.Named{{Name: "pod routes", Runnable: router}}
	// One pod CIDR per IP family: the proxy and the network policy
	// enforcer program those families.
	prefixes, err := cidr.ParseList("cluster CIDR", cluster.ClusterCIDR)
	if err != nil {
		return nil, err
	}
	if !c.DisableProxy {
		proxyClient, err := componentClient(creds, join.KubeProxyUser, "service proxy", log)
		if err != nil {
			return nil, err
		}
		p, err := proxy.New(proxy.Config{Mode: c.ProxyMode, NodeName: c.NodeName, NodeIPs: c.ips, ClusterCIDRs: prefixes}, proxyClient, log)
		if err != nil {
			return nil, err
		}
		parts = append(parts, run.Named{Name: "service proxy", Runnable: p})
	}
	if c.DisableNetworkPolicy {
		if err := netpol.Cleanup(log); err != nil {
			log.Warn("could not remove network policy rules of an earlier run", "err", err)
		}
	} else {
		// The pod network's identity: network policy is part of it.
		e, err := netpol.New(netpol.Config{NodeName: c.NodeName, ClusterCIDRs: prefixes, PodBridge: network.DefaultBridgeName}, routesClient, log)
		if err != nil {
			return nil, err
		}
		parts = append(parts, run.Named{Name: "network policy", Runnable: e})
	}
	if c.IngressHTTPPort > 0 || c.IngressHTTPSPort > 0 {
		ingressClient, err := componentClient(creds, join.IngressUser, "Ingress controller", log)
		if err != nil {
			return nil, err
		}
		m := ingress.NewMetrics()
		if err := km.Register(m.Collectors()...); err != nil {
			return nil, fmt.Errorf("orch agent: Ingress metrics: %w", err)
		}
		gwClient, err := gwclient.NewForConfig(creds.RESTConfigFor(join.IngressUser))
		if err != nil {
			return nil, fmt.Errorf("orch agent: Gateway API client: %w", err)
		}
		srv, err := ingress.New(ingress.Config{HTTPPort: c.IngressHTTPPort, HTTPSPort: c.IngressHTTPSPort}, ingressClient, gwClient, m, log)
		if err != nil {
			return nil, err
		}
		parts = append(parts, run.Named{Name: "Ingress controller", Runnable: srv})
	}
	dnsClient, err := componentClient(creds, join.DNSUser, "cluster DNS", log)
	if err != nil {
		return nil, err
	}
	parts = append(parts, run.Named{Name: "cluster DNS", Runnable: run.Func(func(ctx context.Context) error {
		select {
		case <-cni.Ready():
		case <-ctx.Done():
			return nil
		}
		gw, err := cidr.GatewayIP(cni.PodCIDR())
		if err != nil {
			return err
		}
		addr := func(port int) string { return net.JoinHostPort(gw.String(), fmt.Sprint(port)) }
		server, err := dns.New(dns.Config{
			Domain: cluster.Domain, Listen: []string{addr(dns.Port)}, MetricsAddr: addr(dns.MetricsPort), ResolvConf: c.ResolvConf,
		}, dnsClient, log)
		if err != nil {
			return err
		}
		log.Info("cluster DNS answers on the pod network's gateway", "address", addr(dns.Port))
		return server.Start(ctx)
	})})
	return parts, nil
}

// componentClient is a client of the servers as component user. A server
// of an older version issues no certificate for it: the component then
// acts as the node, which the authorizer may not allow, so say so.
func componentClient(creds *join.Credentials, user, component string, log *slog.Logger) (kubernetes.Interface, error) {
	if !creds.HasIdentity(user) {
		log.Warn("the server issued no certificate for the component's identity (a server of an older version?): "+
			"it uses the node's identity until the certificates are renewed; upgrade the servers", "component", component, "user", user)
	}
	client, err := kubernetes.NewForConfig(creds.RESTConfigFor(user))
	if err != nil {
		return nil, fmt.Errorf("orch agent: client for the %s: %w", component, err)
	}
	return client, nil
}

// Cleanup removes what the agent's cluster network wrote into the host:
// the Service proxy's and the network policy's iptables rules, the routes
// and VXLAN device, the masquerade rules. Other programs' rules stay. `orch agent cleanup`
// runs it, with the agent stopped.
func Cleanup(log *slog.Logger) error {
	return errors.Join(proxy.Cleanup(log), netpol.Cleanup(log), network.CleanupRoutes(log))
}
