package e2e

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestRestart: every object survives a restart of `orch server` on the same
// data directory, unchanged (uid, resourceVersion, data); the kubernetes
// Service keeps 10.43.0.1; resourceVersions keep growing; the logs of both
// runs are free of errors.
func TestRestart(t *testing.T) {
	s := StartServer(t)
	deployApp(t, s)
	s.Kubectl(t, "create", "configmap", "extra", "-n", appNS, "--from-literal=k=v")
	before := objectIdentities(t, s)
	svcIP := jsonpath(t, s, "svc", "web", "{.spec.clusterIP}")
	checkKubernetesService(t, s)

	s.Restart()

	after := objectIdentities(t, s)
	for key, id := range before {
		if after[key] != id {
			t.Errorf("%s after restart: %q, want %q (uid resourceVersion)", key, after[key], id)
		}
	}
	if len(after) != len(before) {
		t.Errorf("after restart %d objects, before %d:\n%v\n%v", len(after), len(before), after, before)
	}
	if got := jsonpath(t, s, "svc", "web", "{.spec.clusterIP}"); got != svcIP {
		t.Errorf("service web clusterIP after restart %s, want %s", got, svcIP)
	}
	if got := jsonpath(t, s, "cm", "web-config", "{.data.greeting}"); got != "hello" {
		t.Errorf("configmap data after restart: greeting=%q", got)
	}
	checkKubernetesService(t, s)

	// New writes get resourceVersions above every old one.
	maxRV := int64(0)
	for _, id := range before {
		rv, _ := strconv.ParseInt(strings.Fields(id)[1], 10, 64)
		maxRV = max(maxRV, rv)
	}
	s.Kubectl(t, "create", "configmap", "fresh", "-n", appNS)
	if rv, _ := strconv.ParseInt(jsonpath(t, s, "cm", "fresh", "{.metadata.resourceVersion}"), 10, 64); rv <= maxRV {
		t.Errorf("resourceVersion after restart %d, not above %d from before", rv, maxRV)
	}

	// The bootstrap puts back a deleted kubernetes Service, with its address.
	s.Kubectl(t, "delete", "svc", "kubernetes", "-n", "default")
	eventually(t, 40*time.Second, func() string {
		r := s.Run(t, Cmd{Args: []string{"get", "svc", "kubernetes", "-n", "default", "-o", "jsonpath={.spec.clusterIP}"}})
		if r.Code != 0 || r.Stdout != "10.43.0.1" {
			return "default/kubernetes not recreated with 10.43.0.1: " + r.Stdout + r.Stderr
		}
		return ""
	})

	for run := 1; run <= 2; run++ {
		log := s.RunLog(run)
		if !strings.Contains(log, `msg="orch server is ready"`) || !strings.Contains(log, "kubeconfig="+s.Kubeconfig) {
			t.Errorf("run %d: no start-up line saying where the kubeconfig is:\n%s", run, log)
		}
		for _, line := range strings.Split(log, "\n") {
			if regexp.MustCompile(`level=ERROR|component=bootstrap.*level=WARN|level=WARN.*component=bootstrap|panic`).MatchString(line) {
				t.Errorf("run %d logged: %s", run, line)
			}
		}
	}
}

// objectIdentities maps "resource/name" of every object in appNS (and the
// namespace itself) to "uid resourceVersion".
func objectIdentities(t *testing.T, s *Server) map[string]string {
	t.Helper()
	var list struct {
		Items []struct {
			Kind     string
			Metadata struct{ Name, UID, ResourceVersion string }
		}
	}
	out := s.Kubectl(t, "get", "deploy,svc,cm,secret,job,cronjob", "-n", appNS, "-o", "json")
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("get -o json: %v", err)
	}
	ids := map[string]string{}
	for _, it := range list.Items {
		ids[it.Kind+"/"+it.Metadata.Name] = it.Metadata.UID + " " + it.Metadata.ResourceVersion
	}
	ids["namespace"] = s.Kubectl(t, "get", "ns", appNS, "-o", "jsonpath={.metadata.uid} {.metadata.resourceVersion}")
	return ids
}

// checkKubernetesService: default/kubernetes is 10.43.0.1:443 and its
// Endpoints point at this server's port.
func checkKubernetesService(t *testing.T, s *Server) {
	t.Helper()
	var svc corev1.Service
	if err := json.Unmarshal([]byte(s.Kubectl(t, "get", "svc", "kubernetes", "-n", "default", "-o", "json")), &svc); err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP != "10.43.0.1" || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 443 || svc.Spec.Ports[0].Name != "https" {
		t.Errorf("default/kubernetes: clusterIP %s ports %+v, want 10.43.0.1 https 443", svc.Spec.ClusterIP, svc.Spec.Ports)
	}
	var ep corev1.Endpoints
	if err := json.Unmarshal([]byte(s.Kubectl(t, "get", "endpoints", "kubernetes", "-n", "default", "-o", "json")), &ep); err != nil {
		t.Fatal(err)
	}
	if len(ep.Subsets) != 1 || len(ep.Subsets[0].Addresses) != 1 || len(ep.Subsets[0].Ports) != 1 ||
		ep.Subsets[0].Ports[0].Port != int32(s.Port) || ep.Subsets[0].Ports[0].Name != "https" {
		t.Errorf("default/kubernetes endpoints %+v, want one address on port https %d", ep.Subsets, s.Port)
	}
}
