package gateway

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"orch/internal/routing"
)

var epoch = time.Unix(1e9, 0)

func class(name string, controller gwv1.GatewayController) *gwv1.GatewayClass {
	return &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: gwv1.GatewayClassSpec{ControllerName: controller}}
}

func gw(ns, name string, age time.Duration, listeners ...gwv1.Listener) *gwv1.Gateway {
	return &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1, CreationTimestamp: metav1.NewTime(epoch.Add(-age))},
		Spec: gwv1.GatewaySpec{GatewayClassName: "orch", Listeners: listeners}}
}

func httpListener(name string, port int32, host string) gwv1.Listener {
	l := gwv1.Listener{Name: gwv1.SectionName(name), Port: port, Protocol: gwv1.HTTPProtocolType}
	if host != "" {
		l.Hostname = ptr.To(gwv1.Hostname(host))
	}
	return l
}

func httpsListener(name string, port int32, secretNS, secret string) gwv1.Listener {
	ref := gwv1.SecretObjectReference{Name: gwv1.ObjectName(secret)}
	if secretNS != "" {
		ref.Namespace = ptr.To(gwv1.Namespace(secretNS))
	}
	return gwv1.Listener{Name: gwv1.SectionName(name), Port: port, Protocol: gwv1.HTTPSProtocolType,
		TLS: &gwv1.ListenerTLSConfig{CertificateRefs: []gwv1.SecretObjectReference{ref}}}
}

func allNamespaces(l gwv1.Listener) gwv1.Listener {
	l.AllowedRoutes = &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: ptr.To(gwv1.NamespacesFromAll)}}
	return l
}

func route(ns, name string, parent gwv1.ParentReference, hosts []string, rules ...gwv1.HTTPRouteRule) *gwv1.HTTPRoute {
	r := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 2, CreationTimestamp: metav1.NewTime(epoch)},
		Spec: gwv1.HTTPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{parent}}, Rules: rules}}
	for _, h := range hosts {
		r.Spec.Hostnames = append(r.Spec.Hostnames, gwv1.Hostname(h))
	}
	return r
}

func parent(ns, name, section string) gwv1.ParentReference {
	p := gwv1.ParentReference{Name: gwv1.ObjectName(name)}
	if ns != "" {
		p.Namespace = ptr.To(gwv1.Namespace(ns))
	}
	if section != "" {
		p.SectionName = ptr.To(gwv1.SectionName(section))
	}
	return p
}

func backend(ns, svc string, port int32) gwv1.HTTPBackendRef {
	ref := gwv1.HTTPBackendRef{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{Name: gwv1.ObjectName(svc), Port: ptr.To(port)}}}
	if ns != "" {
		ref.Namespace = ptr.To(gwv1.Namespace(ns))
	}
	return ref
}

func toService(refs ...gwv1.HTTPBackendRef) gwv1.HTTPRouteRule {
	return gwv1.HTTPRouteRule{BackendRefs: refs}
}

func services(keys ...string) *routing.Services {
	var svcs []*v1.Service
	for i := 0; i+1 < len(keys); i += 2 {
		svcs = append(svcs, &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: keys[i], Name: keys[i+1]},
			Spec: v1.ServiceSpec{Ports: []v1.ServicePort{{Port: 80}}}})
	}
	return routing.NewServices(svcs, nil)
}

func tlsSecret(t *testing.T, ns, name string) *v1.Secret {
	t.Helper()
	cert, key, err := certutil.GenerateSelfSignedCertKey(name+".example", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: v1.SecretTypeTLS,
		Data: map[string][]byte{v1.TLSCertKey: cert, v1.TLSPrivateKeyKey: key}}
}

func grant(ns, fromKind, fromNS, toKind string) *gwv1.ReferenceGrant {
	to := gwv1.Group("")
	return &gwv1.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "g"}, Spec: gwv1.ReferenceGrantSpec{
		From: []gwv1.ReferenceGrantFrom{{Group: Group, Kind: gwv1.Kind(fromKind), Namespace: gwv1.Namespace(fromNS)}},
		To:   []gwv1.ReferenceGrantTo{{Group: to, Kind: gwv1.Kind(toKind)}}}}
}

// cond is the status and reason of a condition type, "" when absent.
func cond(conds []metav1.Condition, typ string) string {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil {
		return ""
	}
	return string(c.Status) + "/" + c.Reason
}

func TestAttach(t *testing.T) {
	classes := []*gwv1.GatewayClass{class("orch", ControllerName), class("other", "example.com/other")}
	web := gw("infra", "web", time.Hour, httpListener("http", 80, "*.example.com"), allNamespaces(httpListener("any", 8080, "")))
	theirs := gw("infra", "theirs", 2*time.Hour, httpListener("http", 80, ""))
	theirs.Spec.GatewayClassName = "other"
	svcs := services("infra", "web", "app", "api", "shared", "db")
	for _, tc := range []struct {
		name      string
		route     *gwv1.HTTPRoute
		grants    []*gwv1.ReferenceGrant
		accepted  string // Accepted condition of the parent status
		resolved  string // ResolvedRefs
		port      int32  // where its rules are served (0: nowhere)
		hosts     []string
		noParents bool
	}{
		{name: "same namespace, hostname within the wildcard",
			route:    route("infra", "r", parent("", "web", "http"), []string{"a.example.com", "other.org"}, toService(backend("", "web", 80))),
			accepted: "True/Accepted", resolved: "True/ResolvedRefs", port: 80, hosts: []string{"a.example.com"}},
		{name: "a wildcard route narrowed to the listener's wildcard",
			route:    route("infra", "r", parent("", "web", "http"), []string{"*.a.example.com"}, toService(backend("", "web", 80))),
			accepted: "True/Accepted", resolved: "True/ResolvedRefs", port: 80, hosts: []string{"*.a.example.com"}},
		{name: "no hostname takes the listener's",
			route:    route("infra", "r", parent("", "web", "http"), nil, toService(backend("", "web", 80))),
			accepted: "True/Accepted", resolved: "True/ResolvedRefs", port: 80, hosts: []string{"*.example.com"}},
		{name: "no common hostname",
			route:    route("infra", "r", parent("", "web", "http"), []string{"other.org"}, toService(backend("", "web", 80))),
			accepted: "False/NoMatchingListenerHostname", resolved: "True/ResolvedRefs"},
		{name: "another namespace on a Same listener",
			route:    route("app", "r", parent("infra", "web", "http"), nil, toService(backend("", "api", 80))),
			accepted: "False/NotAllowedByListeners", resolved: "True/ResolvedRefs"},
		{name: "another namespace on an All listener",
			route:    route("app", "r", parent("infra", "web", "any"), nil, toService(backend("", "api", 80))),
			accepted: "True/Accepted", resolved: "True/ResolvedRefs", port: 8080, hosts: []string{""}},
		{name: "no such section",
			route:    route("infra", "r", parent("", "web", "nope"), nil, toService(backend("", "web", 80))),
			accepted: "False/NoMatchingParent", resolved: "True/ResolvedRefs"},
		{name: "a Service of another namespace without a ReferenceGrant",
			route:    route("app", "r", parent("infra", "web", "any"), nil, toService(backend("shared", "db", 80))),
			accepted: "True/Accepted", resolved: "False/RefNotPermitted", port: 8080, hosts: []string{""}},
		{name: "a Service of another namespace with a ReferenceGrant",
			route:    route("app", "r", parent("infra", "web", "any"), nil, toService(backend("shared", "db", 80))),
			grants:   []*gwv1.ReferenceGrant{grant("shared", "HTTPRoute", "app", "Service")},
			accepted: "True/Accepted", resolved: "True/ResolvedRefs", port: 8080, hosts: []string{""}},
		{name: "a missing Service",
			route:    route("infra", "r", parent("", "web", "any"), nil, toService(backend("", "gone", 80))),
			accepted: "True/Accepted", resolved: "False/BackendNotFound", port: 8080, hosts: []string{""}},
		{name: "a filter orch does not serve",
			route: route("infra", "r", parent("", "web", "any"), nil, gwv1.HTTPRouteRule{
				Filters: []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestMirror, RequestMirror: &gwv1.HTTPRequestMirrorFilter{}}}}),
			accepted: "False/UnsupportedValue", resolved: "True/ResolvedRefs"},
		{name: "another controller's Gateway",
			route:     route("infra", "r", parent("", "theirs", ""), nil, toService(backend("", "web", 80))),
			noParents: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Build(Input{Classes: classes, Gateways: []*gwv1.Gateway{web, theirs}, Routes: []*gwv1.HTTPRoute{tc.route},
				Grants: tc.grants, Services: svcs})
			parents := res.Routes["infra/r"]
			if tc.route.Namespace == "app" {
				parents = res.Routes["app/r"]
			}
			if tc.noParents {
				if len(parents) > 0 || len(res.Ports[80].Rules) > 0 {
					t.Fatalf("status %+v and rules %v for a route of another controller's Gateway", parents, res.Ports[80].Rules)
				}
				return
			}
			if len(parents) != 1 {
				t.Fatalf("parent statuses %+v, want one", parents)
			}
			p := parents[0]
			if p.ControllerName != ControllerName || p.ParentRef.Name != tc.route.Spec.ParentRefs[0].Name {
				t.Errorf("parent status %+v names another controller or parent", p)
			}
			if got := cond(p.Conditions, "Accepted"); got != tc.accepted {
				t.Errorf("Accepted %s, want %s", got, tc.accepted)
			}
			if got := cond(p.Conditions, "ResolvedRefs"); got != tc.resolved {
				t.Errorf("ResolvedRefs %s, want %s", got, tc.resolved)
			}
			if p.Conditions[0].ObservedGeneration != 2 {
				t.Errorf("observedGeneration %d, want the route's 2", p.Conditions[0].ObservedGeneration)
			}
			var hosts []string
			for port, pp := range res.Ports {
				for _, rl := range pp.Rules {
					if port != tc.port {
						t.Errorf("a rule on port %d, want only %d", port, tc.port)
					}
					hosts = append(hosts, rl.Host)
				}
			}
			if len(hosts) != len(tc.hosts) {
				t.Fatalf("rules for hosts %q, want %q", hosts, tc.hosts)
			}
			for i := range hosts {
				if hosts[i] != tc.hosts[i] {
					t.Errorf("rules for hosts %q, want %q", hosts, tc.hosts)
				}
			}
			attached := int32(0)
			if tc.port != 0 {
				attached = 1
			}
			var total int32
			for _, l := range res.Gateways["infra/web"].Listeners {
				total += l.AttachedRoutes
			}
			if total != attached {
				t.Errorf("%d routes attached to web's listeners, want %d", total, attached)
			}
		})
	}
}

func TestListeners(t *testing.T) {
	classes := []*gwv1.GatewayClass{class("orch", ControllerName)}
	tcp := gwv1.Listener{Name: "tcp", Port: 9000, Protocol: gwv1.TCPProtocolType}
	old := gw("a", "old", time.Hour, httpListener("http", 80, ""), httpsListener("https", 443, "", "cert"))
	young := gw("b", "young", time.Minute, httpsListener("clash", 80, "", "cert"), httpsListener("foreign", 8443, "a", "cert"),
		httpsListener("missing", 9443, "", "nope"), httpsListener("garbage", 9444, "", "garbage"), tcp,
		httpListener("dup1", 81, "x.example"), httpListener("dup2", 81, "x.example"),
		httpListener("plain", 83, ""), httpsListener("secure", 83, "", "cert"), httpsListener("taken", 443, "", "cert"),
		httpListener("fine", 84, ""))
	withAddress := gw("a", "addressed", time.Minute, httpListener("http", 82, ""))
	withAddress.Spec.Addresses = []gwv1.GatewaySpecAddress{{Value: "10.0.0.1"}}
	onlyTCP := gw("a", "only-tcp", time.Minute, gwv1.Listener{Name: "tcp", Port: 9001, Protocol: gwv1.TCPProtocolType})
	mtls := gw("a", "mtls", time.Minute, httpListener("http", 85, ""))
	mtls.Spec.TLS = &gwv1.GatewayTLSConfig{Frontend: &gwv1.FrontendTLSConfig{}}
	garbage := tlsSecret(t, "b", "garbage")
	garbage.Data[v1.TLSCertKey] = []byte("-----BEGIN CERTIFICATE-----\nnot one\n-----END CERTIFICATE-----\n")
	secrets := map[string]*v1.Secret{"a/cert": tlsSecret(t, "a", "cert"), "b/cert": tlsSecret(t, "b", "cert"), "b/garbage": garbage}
	routeToMissing := route("b", "r", parent("", "young", "missing"), nil, toService(backend("", "web", 80)))
	res := Build(Input{Classes: classes, Gateways: []*gwv1.Gateway{young, old, withAddress, mtls, onlyTCP}, Secrets: secrets,
		Routes: []*gwv1.HTTPRoute{routeToMissing}, Services: services("b", "web")})

	if p := res.Ports[443]; p == nil || !p.TLS || p.Certs[""] != "a/cert" {
		t.Errorf("port 443: %+v, want TLS with a/cert as its default certificate", p)
	}
	if p := res.Ports[80]; p == nil || p.TLS {
		t.Errorf("port 80: %+v, want plain HTTP (the older Gateway's)", p)
	}
	for _, port := range []int32{8443, 9443, 9444, 9000, 82, 81, 83, 85} {
		if res.Ports[port] != nil {
			t.Errorf("port %d is served; its listener is not valid", port)
		}
	}
	if st := res.Gateways["a/old"]; cond(st.Conditions, "Accepted") != "True/Accepted" || !st.Programmed {
		t.Errorf("old: %+v, want accepted and programmed", st)
	}
	if st := res.Gateways["a/addressed"]; cond(st.Conditions, "Accepted") != "False/UnsupportedAddress" || st.Programmed {
		t.Errorf("addressed: %+v, want not accepted (UnsupportedAddress)", st)
	}
	if st := res.Gateways["a/mtls"]; cond(st.Conditions, "Accepted") != "False/UnsupportedValue" || st.Programmed {
		t.Errorf("mtls: %+v, want not accepted: client certificate validation is not served", st)
	}
	if st := res.Gateways["a/only-tcp"]; cond(st.Conditions, "Accepted") != "False/ListenersNotValid" || st.Programmed {
		t.Errorf("only-tcp: %+v, want not accepted (ListenersNotValid): no listener is accepted", st)
	}
	st := res.Gateways["b/young"]
	if cond(st.Conditions, "Accepted") != "True/ListenersNotValid" {
		t.Errorf("young: %v, want accepted with ListenersNotValid", st.Conditions)
	}
	want := map[string][2]string{ // listener → the condition that says what is wrong
		"clash":   {"Conflicted", "True/ProtocolConflict"}, // an older Gateway's port
		"foreign": {"ResolvedRefs", "False/RefNotPermitted"},
		"missing": {"ResolvedRefs", "False/InvalidCertificateRef"},
		"garbage": {"ResolvedRefs", "False/InvalidCertificateRef"},
		"tcp":     {"Accepted", "False/UnsupportedProtocol"},
		"dup1":    {"Conflicted", "True/HostnameConflict"}, // neither of two equal listeners wins
		"dup2":    {"Conflicted", "True/HostnameConflict"},
		"plain":   {"Conflicted", "True/ProtocolConflict"}, // two protocols on one port of one Gateway
		"secure":  {"Conflicted", "True/ProtocolConflict"},
		"taken":   {"Conflicted", "True/HostnameConflict"}, // an older Gateway's certificate for ""
		"fine":    {"Programmed", "True/Programmed"},
	}
	for _, l := range st.Listeners {
		w := want[string(l.Name)]
		if got := cond(l.Conditions, w[0]); got != w[1] {
			t.Errorf("listener %s: %s is %s, want %s", l.Name, w[0], got, w[1])
		}
		if programmed := cond(l.Conditions, "Programmed") == "True/Programmed"; programmed != (l.Name == "fine") {
			t.Errorf("listener %s: programmed %v", l.Name, programmed)
		}
		// A route attaches to a listener whose references do not
		// resolve, and is counted, but is not served there.
		if attached := l.AttachedRoutes; attached != map[bool]int32{true: 1}[l.Name == "missing"] {
			t.Errorf("listener %s: %d attached routes", l.Name, attached)
		}
		// A protocol not served serves no route kind.
		if want := map[bool]int{true: 0, false: 1}[l.Name == "tcp"]; len(l.SupportedKinds) != want || want == 1 && l.SupportedKinds[0].Kind != "HTTPRoute" {
			t.Errorf("listener %s: supportedKinds %v, want %d (HTTPRoute)", l.Name, l.SupportedKinds, want)
		}
	}
	if got := cond(res.Routes["b/r"][0].Conditions, "Accepted"); got != "True/Accepted" {
		t.Errorf("the route on the listener with a missing certificate: Accepted %s, want True", got)
	}
	if p := res.Ports[84]; p == nil || len(p.Hosts) != 1 || p.Hosts[0] != "" {
		t.Errorf("port 84: %+v, want the host of its listener (any)", p)
	}
	// A ReferenceGrant lets young use a's Secret.
	res = Build(Input{Classes: classes, Gateways: []*gwv1.Gateway{young}, Secrets: secrets,
		Grants: []*gwv1.ReferenceGrant{grant("a", "Gateway", "b", "Secret")}})
	if p := res.Ports[8443]; p == nil || p.Certs[""] != "a/cert" {
		t.Errorf("port 8443 with a ReferenceGrant: %+v, want a/cert", p)
	}
	// Not orch's class: nothing.
	if res := Build(Input{Classes: []*gwv1.GatewayClass{class("orch", "example.com/other")}, Gateways: []*gwv1.Gateway{old}}); len(res.Ports) != 0 || len(res.Gateways) != 0 || len(res.Classes) != 0 {
		t.Errorf("another controller's class: %+v", res)
	}
	// A class with parameters is refused, and its Gateways are not served.
	withParams := class("orch", ControllerName)
	withParams.Spec.ParametersRef = &gwv1.ParametersReference{Kind: "ConfigMap", Name: "x"}
	if res := Build(Input{Classes: []*gwv1.GatewayClass{withParams}, Gateways: []*gwv1.Gateway{old}}); res.Classes["orch"] == "" || len(res.Ports) != 0 {
		t.Errorf("a class with parametersRef: %+v", res)
	}
}

func TestConvert(t *testing.T) {
	classes := []*gwv1.GatewayClass{class("orch", ControllerName)}
	g := gw("ns", "g", time.Hour, httpListener("http", 80, ""))
	exact := gwv1.PathMatchExact
	r := route("ns", "r", parent("", "g", ""), nil, gwv1.HTTPRouteRule{
		Matches: []gwv1.HTTPRouteMatch{
			{Path: &gwv1.HTTPPathMatch{Type: &exact, Value: ptr.To("/login")}, Method: ptr.To(gwv1.HTTPMethodPost),
				Headers:     []gwv1.HTTPHeaderMatch{{Name: "x-version", Value: "2"}, {Name: "X-Version", Value: "3"}}, // the second is ignored
				QueryParams: []gwv1.HTTPQueryParamMatch{{Name: "debug", Value: "1"}, {Name: "debug", Value: "2"}}},    // as is this
			{Path: &gwv1.HTTPPathMatch{Value: ptr.To("/old")}},
		},
		Filters: []gwv1.HTTPRouteFilter{
			{Type: gwv1.HTTPRouteFilterRequestHeaderModifier, RequestHeaderModifier: &gwv1.HTTPHeaderFilter{
				Set: []gwv1.HTTPHeader{{Name: "X-Env", Value: "prod"}}, Add: []gwv1.HTTPHeader{{Name: "X-Add", Value: "1"}}, Remove: []string{"X-Drop"}}},
			{Type: gwv1.HTTPRouteFilterURLRewrite, URLRewrite: &gwv1.HTTPURLRewriteFilter{Hostname: ptr.To(gwv1.PreciseHostname("internal")),
				Path: &gwv1.HTTPPathModifier{Type: gwv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: ptr.To("/new")}}},
		},
		BackendRefs: []gwv1.HTTPBackendRef{backend("", "a", 80), backend("", "b", 80)},
	}, gwv1.HTTPRouteRule{
		Filters: []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestRedirect, RequestRedirect: &gwv1.HTTPRequestRedirectFilter{
			Scheme: ptr.To("https"), StatusCode: ptr.To(301)}}},
	})
	r.Spec.Rules[0].BackendRefs[1].Weight = ptr.To[int32](3)
	res := Build(Input{Classes: classes, Gateways: []*gwv1.Gateway{g}, Routes: []*gwv1.HTTPRoute{r}, Services: services("ns", "a", "ns", "b")})
	rules := res.Ports[80].Rules
	if len(rules) != 3 {
		t.Fatalf("%d rules, want 3 (two matches of the first rule, one for the second)", len(rules))
	}
	login, old, redirect := rules[0], rules[1], rules[2]
	if !login.Exact || login.Path != "/login" || login.Method != "POST" || len(login.Headers) != 1 || login.Headers[0] != (routing.Pair{Name: "X-Version", Value: "2"}) ||
		len(login.Query) != 1 || login.Query[0] != (routing.Pair{Name: "debug", Value: "1"}) {
		t.Errorf("first match: %+v", login)
	}
	if old.Exact || old.Path != "/old" || old.Order != login.Order || redirect.Order <= login.Order {
		t.Errorf("second match: %+v (order %d, first %d, next rule %d)", old, old.Order, login.Order, redirect.Order)
	}
	f := login.Filters
	if f.RequestHeaders.Set[0].Value != "prod" || f.RequestHeaders.Add[0].Name != "X-Add" || f.RequestHeaders.Remove[0] != "X-Drop" ||
		f.Rewrite.Host != "internal" || !f.Rewrite.Path.Prefix || f.Rewrite.Path.Value != "/new" {
		t.Errorf("filters: %+v %+v %+v", f.RequestHeaders, f.Rewrite, f.Rewrite.Path)
	}
	if b := login.Backends; len(b) != 2 || b[0].Weight != 1 || b[1].Weight != 3 || b[1].Service != "ns/b:80" {
		t.Errorf("backends %+v, want a (1) and b (3)", b)
	}
	if rd := redirect.Filters.Redirect; rd == nil || rd.Scheme != "https" || rd.Code != 301 || len(redirect.Backends) != 0 {
		t.Errorf("redirect rule: %+v", redirect)
	}
	if login.Source != (routing.Source{Kind: "HTTPRoute", Name: "ns/r"}) {
		t.Errorf("source %+v", login.Source)
	}
}

func TestIntersect(t *testing.T) {
	for _, tc := range []struct {
		listener string
		route    []string
		want     []string
	}{
		{"", nil, []string{""}},
		{"", []string{"a.example"}, []string{"a.example"}},
		{"a.example", nil, []string{"a.example"}},
		{"a.example", []string{"A.example", "b.example"}, []string{"a.example"}},
		{"*.example", []string{"a.example", "a.b.example", "example"}, []string{"a.example", "a.b.example"}},
		{"a.example", []string{"*.example"}, []string{"a.example"}},
		{"*.example", []string{"*.b.example"}, []string{"*.b.example"}},
		{"*.b.example", []string{"*.example"}, []string{"*.b.example"}},
		{"a.example", []string{"b.example"}, nil},
	} {
		var l *gwv1.Hostname
		if tc.listener != "" {
			l = ptr.To(gwv1.Hostname(tc.listener))
		}
		var hs []gwv1.Hostname
		for _, h := range tc.route {
			hs = append(hs, gwv1.Hostname(h))
		}
		got := intersect(l, hs)
		if len(got) != len(tc.want) {
			t.Errorf("intersect(%q, %q) = %q, want %q", tc.listener, tc.route, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("intersect(%q, %q) = %q, want %q", tc.listener, tc.route, got, tc.want)
			}
		}
	}
}

// TestSupportedFeaturesSorted: GatewayClass status.supportedFeatures must
// be sorted by name, without duplicates.
func TestSupportedFeaturesSorted(t *testing.T) {
	if !slices.IsSorted(SupportedFeatures) || len(slices.Compact(slices.Clone(SupportedFeatures))) != len(SupportedFeatures) {
		t.Errorf("SupportedFeatures is not sorted or has duplicates: %v", SupportedFeatures)
	}
}
