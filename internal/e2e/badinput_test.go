package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// badCase is one request kubectl would never send and the metav1.Status
// upstream answers it with.
type badCase struct {
	name         string
	method, path string
	ctype        string // Content-Type; "" sends none
	body         string
	code         int
	reason       metav1.StatusReason
	check        func(t *testing.T, st metav1.Status) // more checks on the Status
}

const (
	cms    = "/api/v1/namespaces/default/configmaps"
	jsonCT = "application/json"
)

func cm(name string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q}}`, name)
}

// TestBadInput is acceptance item 5 with raw HTTPS and the admin
// certificate: every bad request gets the upstream 4xx and a JSON
// metav1.Status with the upstream reason, never a 500.
func TestBadInput(t *testing.T) {
	s := StartServer(t)
	c := s.Admin(t)
	r := c.Do(t, "POST", s.URL()+cms, []byte(cm("exists")), map[string]string{"Content-Type": jsonCT})
	if r.Code != 201 {
		t.Fatalf("create configmap exists: %s", r.describe())
	}
	var existing metav1.PartialObjectMetadata
	if err := json.Unmarshal(r.Body, &existing); err != nil {
		t.Fatal(err)
	}
	// Change it once so that its first resourceVersion is stale.
	if r := c.Do(t, "PATCH", s.URL()+cms+"/exists", []byte(`{"data":{"a":"1"}}`), map[string]string{"Content-Type": "application/merge-patch+json"}); r.Code != 200 {
		t.Fatalf("patch configmap exists: %s", r.describe())
	}
	stale := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"exists","resourceVersion":%q},"data":{"b":"2"}}`, existing.ResourceVersion)

	cases := []badCase{
		{name: "malformed JSON", method: "POST", path: cms, ctype: jsonCT, body: `{"apiVersion":"v1","kind":`, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "malformed YAML", method: "POST", path: cms, ctype: "application/yaml", body: "a: [\n", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "empty body", method: "POST", path: cms, ctype: jsonCT, body: "", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "4 MiB body", method: "POST", path: cms, ctype: jsonCT, body: strings.Repeat("a", 4<<20), code: 413, reason: metav1.StatusReasonRequestEntityTooLarge},
		{name: "4 MiB update", method: "PUT", path: cms + "/exists", ctype: jsonCT, body: strings.Repeat(" ", 4<<20), code: 413, reason: metav1.StatusReasonRequestEntityTooLarge},
		{name: "4 MiB patch", method: "PATCH", path: cms + "/exists", ctype: "application/merge-patch+json", body: strings.Repeat(" ", 4<<20) + "{}", code: 413, reason: metav1.StatusReasonRequestEntityTooLarge},
		{name: "object over 1.5 MiB", method: "POST", path: "/api/v1/namespaces/default/podtemplates", ctype: jsonCT, body: bigPodTemplate(1900 << 10),
			code: 413, reason: metav1.StatusReasonRequestEntityTooLarge},
		{name: "configmap over 1 MiB", method: "POST", path: cms, ctype: jsonCT,
			body: fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"a":%q}}`, strings.Repeat("x", 1100<<10)),
			code: 422, reason: metav1.StatusReasonInvalid, check: hasCause("", metav1.CauseTypeTooLong)},
		{name: "invalid name", method: "POST", path: cms, ctype: jsonCT, body: cm("Bad_Name"), code: 422, reason: metav1.StatusReasonInvalid,
			check: func(t *testing.T, st metav1.Status) {
				hasCause("metadata.name", metav1.CauseTypeFieldValueInvalid)(t, st)
				if st.Details == nil || st.Details.Name != "Bad_Name" || st.Details.Kind != "ConfigMap" {
					t.Errorf("details %+v, want name Bad_Name kind ConfigMap", st.Details)
				}
			}},
		{name: "missing selector", method: "POST", path: "/apis/apps/v1/namespaces/default/deployments", ctype: jsonCT,
			body: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`,
			code: 422, reason: metav1.StatusReasonInvalid, check: hasCause("spec.selector", metav1.CauseTypeFieldValueRequired)},
		{name: "service port out of range", method: "POST", path: "/api/v1/namespaces/default/services", ctype: jsonCT,
			body: `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"ports":[{"port":70000}]}}`,
			code: 422, reason: metav1.StatusReasonInvalid, check: hasCause("spec.ports[0].port", metav1.CauseTypeFieldValueInvalid)},
		{name: "unknown field, Strict", method: "POST", path: cms + "?fieldValidation=Strict", ctype: jsonCT,
			body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"strict"},"bogusField":1}`, code: 400, reason: metav1.StatusReasonBadRequest,
			check: messageHas(`unknown field "bogusField"`)},
		{name: "duplicate field, Strict", method: "POST", path: cms + "?fieldValidation=Strict", ctype: jsonCT,
			body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","name":"b"}}`, code: 400, reason: metav1.StatusReasonBadRequest,
			check: messageHas(`duplicate field`)},
		{name: "unknown resource", method: "GET", path: "/api/v1/namespaces/default/widgets", code: 404, reason: metav1.StatusReasonNotFound},
		{name: "unknown group", method: "GET", path: "/apis/nosuch.example.com/v1/things", code: 404, reason: metav1.StatusReasonNotFound},
		{name: "missing object", method: "GET", path: cms + "/nosuch", code: 404, reason: metav1.StatusReasonNotFound, check: messageHas(`configmaps "nosuch" not found`)},
		{name: "missing namespace", method: "POST", path: "/api/v1/namespaces/nosuch/configmaps", ctype: jsonCT, body: cm("a"), code: 404, reason: metav1.StatusReasonNotFound,
			check: messageHas(`namespaces "nosuch" not found`)},
		{name: "POST to a named object", method: "POST", path: cms + "/exists", ctype: jsonCT, body: cm("exists"), code: 405, reason: metav1.StatusReasonMethodNotAllowed},
		{name: "PUT to a collection", method: "PUT", path: cms, ctype: jsonCT, body: cm("exists"), code: 405, reason: metav1.StatusReasonMethodNotAllowed},
		{name: "PATCH to a collection", method: "PATCH", path: cms, ctype: "application/merge-patch+json", body: `{}`, code: 405, reason: metav1.StatusReasonMethodNotAllowed},
		{name: "wrong content type", method: "POST", path: cms, ctype: "text/plain", body: "hello", code: 415, reason: metav1.StatusReasonUnsupportedMediaType},
		{name: "patch as application/json", method: "PATCH", path: cms + "/exists", ctype: jsonCT, body: `{}`, code: 415, reason: metav1.StatusReasonUnsupportedMediaType},
		{name: "protobuf garbage", method: "POST", path: cms, ctype: "application/vnd.kubernetes.protobuf", body: "garbage!!", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "protobuf magic then garbage", method: "POST", path: cms, ctype: "application/vnd.kubernetes.protobuf", body: "k8s\x00\x0a\x02zz\xff\xff", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "kind does not match the URL", method: "POST", path: cms, ctype: jsonCT, body: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"a"}}`, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "namespace does not match the URL", method: "POST", path: cms, ctype: jsonCT,
			body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"kube-system"}}`, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "name does not match the URL", method: "PUT", path: cms + "/exists", ctype: jsonCT, body: cm("other"), code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "create of an existing name", method: "POST", path: cms, ctype: jsonCT, body: cm("exists"), code: 409, reason: metav1.StatusReasonAlreadyExists,
			check: func(t *testing.T, st metav1.Status) {
				if st.Details == nil || st.Details.Name != "exists" || st.Details.Kind != "configmaps" {
					t.Errorf("details %+v, want name exists kind configmaps", st.Details)
				}
			}},
		{name: "update with a stale resourceVersion", method: "PUT", path: cms + "/exists", ctype: jsonCT, body: stale, code: 409, reason: metav1.StatusReasonConflict,
			check: messageHas("the object has been modified")},
		{name: "JSON patch of a missing path", method: "PATCH", path: cms + "/exists", ctype: "application/json-patch+json",
			body: `[{"op":"remove","path":"/data/nosuch"}]`, code: 422, reason: metav1.StatusReasonInvalid},
		{name: "JSON patch that is not a list", method: "PATCH", path: cms + "/exists", ctype: "application/json-patch+json",
			body: `{"op":"remove"}`, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "malformed strategic merge patch", method: "PATCH", path: cms + "/exists", ctype: "application/strategic-merge-patch+json",
			body: `[1,2`, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "bad label selector", method: "GET", path: cms + "?labelSelector=a%20in%20(", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "unsupported field selector", method: "GET", path: cms + "?fieldSelector=spec.foo%3Dbar", code: 400, reason: metav1.StatusReasonBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{}
			if tc.ctype != "" {
				h["Content-Type"] = tc.ctype
			}
			r := c.Do(t, tc.method, s.URL()+tc.path, []byte(tc.body), h)
			st := expectStatus(t, tc.method+" "+truncate(tc.path, 80), r, tc.code, tc.reason)
			if tc.check != nil && !t.Failed() {
				tc.check(t, st)
			}
		})
	}

	t.Run("unknown field, Warn and Ignore", func(t *testing.T) {
		for _, v := range []string{"Warn", "Ignore"} {
			body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"lenient-%s"},"bogusField":1}`, strings.ToLower(v))
			r := c.Do(t, "POST", s.URL()+cms+"?fieldValidation="+v, []byte(body), map[string]string{"Content-Type": jsonCT})
			warning := r.Header.Get("Warning")
			if r.Code != 201 {
				t.Errorf("fieldValidation=%s: %s, want 201", v, r.describe())
			}
			if got := strings.Contains(warning, `unknown field \"bogusField\"`) && strings.HasPrefix(warning, "299 "); got != (v == "Warn") {
				t.Errorf("fieldValidation=%s: Warning header %q", v, warning)
			}
		}
	})

	// The server survived all of it.
	if r := c.Do(t, "GET", s.URL()+"/readyz", nil, nil); r.Code != 200 {
		t.Errorf("/readyz after bad input: %s", r.describe())
	}
	if strings.Contains(s.Logs(), "panic") {
		t.Errorf("the server logged a panic:\n%s", s.Logs())
	}
}

func hasCause(field string, reason metav1.CauseType) func(*testing.T, metav1.Status) {
	return func(t *testing.T, st metav1.Status) {
		t.Helper()
		if st.Details != nil {
			for _, c := range st.Details.Causes {
				if c.Field == field || (field == "" && c.Field == "[]") {
					if c.Type != reason {
						t.Errorf("cause for %q is %q, want %q", field, c.Type, reason)
					}
					return
				}
			}
		}
		t.Errorf("no cause for field %q in %+v", field, st.Details)
	}
}

func messageHas(s string) func(*testing.T, metav1.Status) {
	return func(t *testing.T, st metav1.Status) {
		t.Helper()
		if !strings.Contains(st.Message, s) {
			t.Errorf("message %q does not contain %q", st.Message, s)
		}
	}
}

// bigPodTemplate is a valid PodTemplate of about size bytes (no validation
// limits its args; etcd's 1.5 MiB request limit does).
func bigPodTemplate(size int) string {
	var args bytes.Buffer
	for args.Len() < size {
		if args.Len() > 0 {
			args.WriteByte(',')
		}
		fmt.Fprintf(&args, "%q", strings.Repeat("x", 1000))
	}
	return `{"apiVersion":"v1","kind":"PodTemplate","metadata":{"name":"huge"},"template":{"spec":{"containers":[{"name":"c","image":"busybox","args":[` +
		args.String() + `]}]}}}`
}
