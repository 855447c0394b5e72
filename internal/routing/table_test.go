package routing

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func rule(host, path string, exact bool, name string) *Rule {
	return &Rule{Host: host, Path: path, Exact: exact, Backends: []Weighted{{Backend: &Backend{Service: name}, Weight: 1}}}
}

func TestMatchPrecedence(t *testing.T) {
	withMethod := rule("", "/api", false, "post")
	withMethod.Method = http.MethodPost
	oneHeader := rule("", "/api", false, "one-header")
	oneHeader.Headers = []Pair{{"X-Version", "2"}}
	twoHeaders := rule("", "/api", false, "two-headers")
	twoHeaders.Headers = []Pair{{"X-Version", "2"}, {"X-Beta", "yes"}}
	query := rule("", "/api", false, "query")
	query.Query = []Pair{{"v", "3"}}
	older := rule("", "/tie", false, "older")
	younger := rule("", "/tie", false, "younger")
	older.Order, younger.Order = 1, 2
	gatewayWild := rule("*.gw.example", "/", false, "gateway-wildcard")
	ingressWild := rule("*.ing.example", "/", false, "ingress-wildcard")
	ingressWild.OneLabel = true
	tab := NewTable([]*Rule{
		rule("", "/", false, "root"), rule("", "/api", false, "api"), rule("", "/api/v1", false, "v1"),
		rule("", "/exact", true, "exact"), withMethod, oneHeader, twoHeaders, query, younger, older,
		rule("web.example", "/web", false, "web"), rule("*.example", "/", false, "wildcard"),
		rule("*.b.example", "/", false, "longer-wildcard"), gatewayWild, ingressWild,
	}, rule("", "/", false, "fallback"))
	for _, tc := range []struct {
		method, url string
		header      http.Header
		want        string
	}{
		{"GET", "http://x/", nil, "root"},
		{"GET", "http://x/api/users", nil, "api"},
		{"GET", "http://x/api/v1/users", nil, "v1"}, // the longest prefix
		{"GET", "http://x/apiary", nil, "root"},     // by path element
		{"GET", "http://x/exact", nil, "exact"},
		{"GET", "http://x/exact/", nil, "root"},
		{"POST", "http://x/api", nil, "post"}, // a method match before header matches
		{"GET", "http://x/api", http.Header{"X-Version": {"2"}}, "one-header"},
		{"GET", "http://x/api", http.Header{"X-Version": {"2"}, "X-Beta": {"yes"}}, "two-headers"}, // more headers first
		{"GET", "http://x/api?v=3", nil, "query"},
		{"GET", "http://x/api?v=4", nil, "api"},
		{"GET", "http://x/tie", nil, "older"},                      // the lower Order
		{"GET", "http://web.example/web/x", nil, "web"},            // the exact host
		{"GET", "http://WEB.example./web", nil, "web"},             // case and a trailing dot
		{"GET", "http://web.example/other", nil, "wildcard"},       // falls through to the wildcard
		{"GET", "http://a.b.example/", nil, "longer-wildcard"},     // the longer wildcard first
		{"GET", "http://example/", nil, "root"},                    // a wildcard needs a label
		{"GET", "http://a.b.gw.example/", nil, "gateway-wildcard"}, // Gateway API: labels
		{"GET", "http://a.ing.example/", nil, "ingress-wildcard"},
		{"GET", "http://a.b.ing.example/", nil, "wildcard"}, // an Ingress's: one label
		{"GET", "http://x/public/../exact", nil, "exact"},   // cleaned first
	} {
		r := httptest.NewRequest(tc.method, tc.url, nil)
		for k, vs := range tc.header {
			r.Header[k] = vs
		}
		got := tab.Match(r)
		if got == nil || got.Backends[0].Service != tc.want {
			t.Errorf("%s %s %v: got %+v, want %s", tc.method, tc.url, tc.header, got, tc.want)
		}
	}
	empty := NewTable(nil, nil)
	if got := empty.Match(httptest.NewRequest("GET", "http://x/", nil)); got != nil {
		t.Errorf("an empty table matched %+v", got)
	}
}

func TestNewPath(t *testing.T) {
	for _, tc := range []struct {
		change       *PathChange
		path, prefix string
		want         string
	}{
		{nil, "/a/b", "/a", "/a/b"},
		{&PathChange{Value: "/full"}, "/a/b", "/a", "/full"},
		{&PathChange{Prefix: true, Value: "/x"}, "/a/b", "/a", "/x/b"},
		{&PathChange{Prefix: true, Value: "/x"}, "/a", "/a", "/x"},
		{&PathChange{Prefix: true, Value: "/x"}, "/a/", "/a", "/x/"},
		{&PathChange{Prefix: true, Value: "/x/"}, "/a/b", "/a/", "/x/b"},
		{&PathChange{Prefix: true, Value: "/"}, "/a/b", "/a", "/b"},
		{&PathChange{Prefix: true, Value: "/"}, "/a", "/a", "/"},
		{&PathChange{Prefix: true, Value: "/x"}, "/b", "/", "/x/b"},
	} {
		if got := tc.change.NewPath(tc.path, tc.prefix); got != tc.want {
			t.Errorf("%+v.NewPath(%q, %q) = %q, want %q", tc.change, tc.path, tc.prefix, got, tc.want)
		}
	}
}

func TestHeaderChanges(t *testing.T) {
	h := http.Header{"Keep": {"1"}, "Replace": {"old"}, "Drop": {"x"}, "Append": {"a"}}
	(&HeaderChanges{Set: []Pair{{"Replace", "new"}, {"New", "n"}}, Add: []Pair{{"Append", "b"}}, Remove: []string{"drop"}}).Apply(h)
	want := http.Header{"Keep": {"1"}, "Replace": {"new"}, "New": {"n"}, "Append": {"a", "b"}}
	if len(h) != len(want) {
		t.Fatalf("headers %v, want %v", h, want)
	}
	for k, vs := range want {
		if got := h.Values(k); len(got) != len(vs) || got[0] != vs[0] || got[len(got)-1] != vs[len(vs)-1] {
			t.Errorf("%s: %v, want %v", k, got, vs)
		}
	}
	(*HeaderChanges)(nil).Apply(h) // no changes: nothing happens
}

func TestCleanPath(t *testing.T) {
	for in, want := range map[string]string{
		"": "/", "/": "/", "//api": "/api", "/a/./b": "/a/b", "/public/../admin": "/admin", "/a/": "/a/", "/../x": "/x",
	} {
		if got := CleanPath(in); got != want {
			t.Errorf("CleanPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestHeaderMatch(t *testing.T) {
	repeated := rule("", "/", false, "repeated")
	repeated.Headers = []Pair{{"X-Tag", "a,b"}}
	host := rule("", "/", false, "host")
	host.Headers = []Pair{{"Host", "h.example"}}
	tab := NewTable([]*Rule{repeated, host}, nil)
	r := httptest.NewRequest("GET", "http://x/", nil)
	r.Header.Add("X-Tag", "a")
	r.Header.Add("X-Tag", "b")
	if got := tab.Match(r); got == nil || got.Backends[0].Service != "repeated" {
		t.Errorf("a header sent twice: %+v, want its values joined by commas to match", got)
	}
	if got := tab.Match(httptest.NewRequest("GET", "http://h.example/", nil)); got == nil || got.Backends[0].Service != "host" {
		t.Errorf("a Host header match: %+v", got)
	}
	if got := tab.Match(httptest.NewRequest("GET", "http://x/", nil)); got != nil {
		t.Errorf("no header matched: %+v", got)
	}
}

func TestWithoutFallbackFor(t *testing.T) {
	tab := NewTable([]*Rule{rule("gw.example", "/only", false, "gw")}, rule("", "/", false, "fallback")).
		WithoutFallbackFor([]string{"gw.example", "*.wild.example"})
	for host, want := range map[string]string{
		"gw.example": "", "a.b.wild.example": "", "wild.example": "fallback", "other.example": "fallback",
	} {
		got := tab.Match(httptest.NewRequest("GET", "http://"+host+"/x", nil))
		if (want == "" && got != nil) || (want != "" && (got == nil || got.Backends[0].Service != want)) {
			t.Errorf("%s: %+v, want %q", host, got, want)
		}
	}
	all := NewTable(nil, rule("", "/", false, "fallback")).WithoutFallbackFor([]string{""})
	if got := all.Match(httptest.NewRequest("GET", "http://any.example/", nil)); got != nil {
		t.Errorf("a listener without hostname takes every host: %+v", got)
	}
}
