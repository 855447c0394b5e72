package apiserver

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"orch/internal/apiserver/registry/all"
)

// fuzzServer is a Server with no storage: the decode → default → validate
// path and the storage encoding do not touch it.
func fuzzServer(t testing.TB) *Server {
	_, cidr, _ := net.ParseCIDR("10.43.0.0/16")
	s, err := New(Config{Resources: all.Resources(), ServiceCIDRs: []*net.IPNet{cidr}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var fuzzContentTypes = []string{mediaJSON, mediaYAML, mediaProtobuf}

// FuzzCreatePath feeds arbitrary bodies through what a create does before
// storage: decode (strict and not), defaults, metadata, validation, and the
// protobuf round trip of storage. Nothing may panic.
func FuzzCreatePath(f *testing.F) {
	seeds := []string{
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i","ports":[{"containerPort":80}]}]}}`,
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`,
		`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"type":"NodePort","ports":[{"port":80,"targetPort":"http"}]}}`,
		"apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c}\nspec:\n  schedule: '@hourly'\n  jobTemplate: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: c, image: i}]}}}}\n",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","labels":{"bad key":"v"}},"data":{"k":"v"}}`,
		`{"kind":"Pod","spec":{"containers":null,"volumes":[{"name":"v"}]}}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}],"ephemeralContainers":[{"name":"d","image":"i","targetContainerName":"c","ports":[{"containerPort":1}],"volumeMounts":[{"name":"v","mountPath":"/m","subPath":"s"}]}]}}`,
		"k8s\x00garbage",
	}
	for _, s := range seeds {
		for i := range fuzzContentTypes {
			f.Add(uint8(0), uint8(i), []byte(s))
		}
	}
	s := fuzzServer(f)
	stores := make([]*resourceStore, 0, len(s.resources))
	for _, g := range s.groups {
		stores = append(stores, g.resources...)
	}
	f.Fuzz(func(t *testing.T, which, contentType uint8, body []byte) {
		rs := stores[int(which)%len(stores)]
		r := httptest.NewRequest(http.MethodPost, "/?fieldValidation=Strict", bytes.NewReader(body))
		r.Header.Set("Content-Type", fuzzContentTypes[int(contentType)%len(fuzzContentTypes)])
		obj, _, err := s.decodeObject(r, rs, body)
		if err != nil {
			if toStatus(err, rs.gr, "").Code >= 500 {
				t.Fatalf("decode error maps to a 5xx: %v", err)
			}
			return
		}
		accessor := mustAccessor(obj)
		if accessor.GetName() == "" {
			accessor.SetName("fuzz")
		}
		accessor.SetNamespace("default")
		accessor.SetResourceVersion("")
		prepareCreateMeta(rs, accessor, accessor.GetCreationTimestamp())
		if rs.res.Default != nil {
			rs.res.Default(obj)
		}
		if rs.res.PrepareForCreate != nil {
			rs.res.PrepareForCreate(obj)
		}
		validateObject(rs, obj, nil, "")
		validateObject(rs, obj, obj.DeepCopyObject(), "")
		for name, sub := range rs.res.SpecSubresources {
			// A write through the subresource onto a stored object with
			// nothing in its spec (pods/ephemeralcontainers).
			written, old := obj.DeepCopyObject(), rs.res.New()
			sub.PrepareForUpdate(written, old)
			validateObject(rs, written, old, name)
		}
		data, err := rs.encode(obj)
		if err != nil {
			return
		}
		if _, _, err := s.codecs.storage.Decode(data, nil, rs.res.New()); err != nil {
			t.Fatalf("stored bytes do not decode: %v", err)
		}
	})
}
