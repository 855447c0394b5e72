package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestGet is acceptance item 2's reading side: get in every output format,
// get -w following changes live, and describe.
func TestGet(t *testing.T) {
	s := StartServer(t)
	deployApp(t, s)

	t.Run("get all", func(t *testing.T) {
		// The deployment controller makes a ReplicaSet and its 2 (unscheduled)
		// pods, the job controller the job's pod.
		var tbs []table
		eventually(t, 30*time.Second, func() string {
			tbs = parseTables(s.Kubectl(t, "get", "all", "-n", appNS))
			if len(tbs) != 6 || len(tbs[0].Rows) != 3 {
				return fmt.Sprintf("get all: %d tables, want 6 (pods, services, deployments, replicasets, cronjobs, jobs) with 3 pods: %+v", len(tbs), tbs)
			}
			return ""
		})
		tbs[0].expectHeader(t, "NAME", "READY", "STATUS", "RESTARTS", "AGE")
		tbs[0].expectRow(t, "READY", "0/1", "STATUS", "Pending", "RESTARTS", "0")
		tbs[1].expectHeader(t, "NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE")
		tbs[1].expectRow(t, "NAME", "service/web", "TYPE", "ClusterIP", "EXTERNAL-IP", "<none>", "PORT(S)", "80/TCP")
		tbs[2].expectHeader(t, "NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE")
		tbs[2].expectRow(t, "NAME", "deployment.apps/web", "READY", "0/2", "AVAILABLE", "0")
		tbs[3].expectHeader(t, "NAME", "DESIRED", "CURRENT", "READY", "AGE")
		tbs[3].expectRow(t, "DESIRED", "2", "CURRENT", "2", "READY", "0")
		tbs[4].expectHeader(t, "NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE")
		tbs[4].expectRow(t, "NAME", "cronjob.batch/nightly", "SCHEDULE", "0 3 * * *", "TIMEZONE", "<none>",
			"SUSPEND", "False", "ACTIVE", "0", "LAST SCHEDULE", "<none>")
		tbs[5].expectHeader(t, "NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE")
		tbs[5].expectRow(t, "NAME", "job.batch/once", "STATUS", "Running", "COMPLETIONS", "0/1")
	})

	t.Run("-o yaml", func(t *testing.T) {
		var d appsv1.Deployment
		out := s.Kubectl(t, "get", "deploy", "web", "-n", appNS, "-o", "yaml")
		if err := yaml.UnmarshalStrict([]byte(out), &d); err != nil {
			t.Fatalf("get -o yaml is not a Deployment: %v\n%s", err, out)
		}
		// Upstream defaulting of a Deployment and its pod template.
		c := d.Spec.Template.Spec.Containers
		checks := map[string]bool{
			"apiVersion apps/v1, kind Deployment":  d.APIVersion == "apps/v1" && d.Kind == "Deployment",
			"uid, creationTimestamp, generation 1": d.UID != "" && !d.CreationTimestamp.IsZero() && d.Generation == 1,
			"replicas 2":                           d.Spec.Replicas != nil && *d.Spec.Replicas == 2,
			"strategy RollingUpdate 25%/25%": d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType &&
				d.Spec.Strategy.RollingUpdate != nil && d.Spec.Strategy.RollingUpdate.MaxSurge.String() == "25%" &&
				d.Spec.Strategy.RollingUpdate.MaxUnavailable.String() == "25%",
			"revisionHistoryLimit 10, progressDeadlineSeconds 600": ptrIs(d.Spec.RevisionHistoryLimit, 10) && ptrIs(d.Spec.ProgressDeadlineSeconds, 600),
			"pod restartPolicy Always, dnsPolicy ClusterFirst, schedulerName default-scheduler, grace 30": d.Spec.Template.Spec.RestartPolicy == corev1.RestartPolicyAlways &&
				d.Spec.Template.Spec.DNSPolicy == corev1.DNSClusterFirst && d.Spec.Template.Spec.SchedulerName == "default-scheduler" &&
				ptrIs(d.Spec.Template.Spec.TerminationGracePeriodSeconds, 30),
			"container imagePullPolicy IfNotPresent, terminationMessagePath, port protocol TCP": len(c) == 1 && c[0].ImagePullPolicy == corev1.PullIfNotPresent &&
				c[0].TerminationMessagePath == "/dev/termination-log" && len(c[0].Ports) == 1 && c[0].Ports[0].Protocol == corev1.ProtocolTCP,
			"no managedFields by default": len(d.ManagedFields) == 0,
		}
		for what, ok := range checks {
			if !ok {
				t.Errorf("get -o yaml: want %s:\n%s", what, out)
			}
		}
	})

	t.Run("-o json", func(t *testing.T) {
		var svc corev1.Service
		out := s.Kubectl(t, "get", "svc", "web", "-n", appNS, "-o", "json")
		if err := json.Unmarshal([]byte(out), &svc); err != nil {
			t.Fatalf("get -o json is not a Service: %v\n%s", err, out)
		}
		_, cidr, _ := net.ParseCIDR("10.43.0.0/16")
		ip := net.ParseIP(svc.Spec.ClusterIP)
		if ip == nil || !cidr.Contains(ip) || ip.String() == "10.43.0.1" || len(svc.Spec.ClusterIPs) != 1 || svc.Spec.ClusterIPs[0] != svc.Spec.ClusterIP {
			t.Errorf("service clusterIP %q clusterIPs %q, want one free address in 10.43.0.0/16", svc.Spec.ClusterIP, svc.Spec.ClusterIPs)
		}
		p := svc.Spec.Ports
		if svc.Spec.Type != corev1.ServiceTypeClusterIP || svc.Spec.SessionAffinity != corev1.ServiceAffinityNone ||
			len(p) != 1 || p[0].Protocol != corev1.ProtocolTCP || p[0].TargetPort.IntValue() != 8080 {
			t.Errorf("service not defaulted like upstream (type ClusterIP, sessionAffinity None, TCP, targetPort 8080):\n%s", out)
		}
		wide := parseTable(s.Kubectl(t, "get", "svc", "web", "-n", appNS, "-o", "wide"))
		wide.expectRow(t, "NAME", "web", "CLUSTER-IP", svc.Spec.ClusterIP, "SELECTOR", "app=web")
	})

	t.Run("-o wide", func(t *testing.T) {
		tb := parseTable(s.Kubectl(t, "get", "deploy", "-n", appNS, "-o", "wide"))
		tb.expectHeader(t, "NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR")
		tb.expectRow(t, "NAME", "web", "READY", "0/2", "CONTAINERS", "web", "IMAGES", "busybox:1.36", "SELECTOR", "app=web")
	})

	t.Run("-o name", func(t *testing.T) {
		out := s.Kubectl(t, "get", "deploy,svc,cm,secret,job,cronjob", "-n", appNS, "-o", "name")
		out = strings.Replace(out, "configmap/"+rootCAConfigMap+"\n", "", 1)
		expectLines(t, out, "deployment.apps/web", "service/web", "configmap/web-config", "secret/web-secret",
			"job.batch/once", "cronjob.batch/nightly")
		expectLines(t, s.Kubectl(t, "get", "cm", "-n", appNS, "-l", "tier=e2e", "-o", "name"), "configmap/web-config")
	})

	t.Run("get -w", func(t *testing.T) {
		w := s.StartKubectl(t, "get", "cm", "-n", appNS, "-w", "--output-watch-events")
		w.WaitFor(t, 30*time.Second, hasRow("ADDED", "web-config"))
		s.Kubectl(t, "create", "configmap", "live", "-n", appNS, "--from-literal=a=1")
		w.WaitFor(t, 30*time.Second, hasRow("ADDED", "live"))
		s.Kubectl(t, "patch", "configmap", "live", "-n", appNS, "--type", "merge", "-p", `{"data":{"b":"2"}}`)
		w.WaitFor(t, 30*time.Second, hasRow("MODIFIED", "live", "2"))
		s.Kubectl(t, "delete", "configmap", "live", "-n", appNS)
		w.WaitFor(t, 30*time.Second, hasRow("DELETED", "live"))
	})

	t.Run("describe", func(t *testing.T) {
		out := s.Kubectl(t, "describe", "deploy", "web", "-n", appNS)
		expectMatches(t, "describe deployment", out, `(?m)^Name:\s+web$`, `(?m)^Namespace:\s+`+appNS+`$`,
			`(?m)^Selector:\s+app=web$`, `(?m)^Replicas:\s+2 desired \| 2 updated \| 2 total \| 0 available \| 2 unavailable$`,
			`(?m)^StrategyType:\s+RollingUpdate$`, `(?m)^RollingUpdateStrategy:\s+25% max unavailable, 25% max surge$`,
			`(?m)^\s+Image:\s+busybox:1.36$`, `(?m)^\s+Port:\s+8080/TCP$`)
		out = s.Kubectl(t, "describe", "svc", "web", "-n", appNS)
		expectMatches(t, "describe service", out, `(?m)^Name:\s+web$`, `(?m)^Type:\s+ClusterIP$`, `(?m)^IP:\s+10\.43\.\d+\.\d+$`,
			`(?m)^Port:\s+<unset>\s+80/TCP$`, `(?m)^TargetPort:\s+8080/TCP$`, `(?m)^Selector:\s+app=web$`)
		out = s.Kubectl(t, "describe", "cm", "web-config", "-n", appNS)
		expectMatches(t, "describe configmap", out, `(?m)^Labels:\s+tier=e2e$`, `(?m)^greeting:\n----\nhello$`)
	})
}

// hasRow is a WaitFor condition: some line of a table has these cells in order.
func hasRow(cells ...string) func(string) string {
	re := regexp.MustCompile(`(?m)^` + strings.Join(quoteAll(cells), `\s+`) + `\s`)
	return func(out string) string {
		if re.MatchString(out) {
			return ""
		}
		return "no line " + strings.Join(cells, " ") + " in:\n" + out
	}
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = regexp.QuoteMeta(v)
	}
	return out
}

func expectMatches(t *testing.T, what, out string, patterns ...string) {
	t.Helper()
	for _, p := range patterns {
		if !regexp.MustCompile(p).MatchString(out) {
			t.Errorf("%s does not match %s:\n%s", what, p, out)
		}
	}
}

func ptrIs[T comparable](p *T, v T) bool { return p != nil && *p == v }
