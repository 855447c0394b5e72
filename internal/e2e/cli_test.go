package e2e

import (
	"encoding/json"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestVersion: `orch --version` names orch and the Kubernetes version it serves.
func TestVersion(t *testing.T) {
	out, err := exec.Command(orchBin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("orch --version: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`(?m)^orch version v\S+`).Match(out) {
		t.Errorf("orch --version does not print orch's version:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^Kubernetes v1\.37\.2\b`).Match(out) {
		t.Errorf("orch --version does not print Kubernetes v1.37.2:\n%s", out)
	}
}

// TestFirstLook is acceptance item 1: what a new user types first.
func TestFirstLook(t *testing.T) {
	s := StartServer(t)

	t.Run("kubectl version", func(t *testing.T) {
		out := s.Kubectl(t, "version")
		for _, re := range []string{`(?m)^Client Version: v1\.37\.2\+orch\.\S+$`, `(?m)^Server Version: v1\.37\.2\+orch\.\S+$`} {
			if !regexp.MustCompile(re).MatchString(out) {
				t.Errorf("kubectl version does not match %s:\n%s", re, out)
			}
		}
		if strings.Contains(out, "v0.0.0-master") {
			t.Errorf("kubectl version reports v0.0.0-master:\n%s", out)
		}
		var v struct {
			Client, Server struct{ Major, Minor, GitVersion string }
		}
		js := s.Kubectl(t, "version", "-o", "json")
		if err := json.Unmarshal([]byte(strings.ReplaceAll(strings.ReplaceAll(js, `"clientVersion"`, `"client"`), `"serverVersion"`, `"server"`)), &v); err != nil {
			t.Fatalf("kubectl version -o json: %v\n%s", err, js)
		}
		for name, info := range map[string]struct{ Major, Minor, GitVersion string }{"client": v.Client, "server": v.Server} {
			if info.Major != "1" || info.Minor != "37" || !strings.HasPrefix(info.GitVersion, "v1.37.2+orch.") {
				t.Errorf("%s version %+v, want 1.37 v1.37.2+orch.…", name, info)
			}
		}
	})

	t.Run("get ns", func(t *testing.T) {
		tb := parseTable(s.Kubectl(t, "get", "ns"))
		tb.expectHeader(t, "NAME", "STATUS", "AGE")
		for _, ns := range defaultNamespaces {
			tb.expectRow(t, "NAME", ns, "STATUS", "Active")
		}
		if len(tb.Rows) != len(defaultNamespaces) {
			t.Errorf("get ns: %d rows, want %d: %q", len(tb.Rows), len(defaultNamespaces), tb.Rows)
		}
	})

	t.Run("get all -A", func(t *testing.T) {
		tb := parseTable(s.Kubectl(t, "get", "all", "-A"))
		tb.expectHeader(t, "NAMESPACE", "NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE")
		tb.expectRow(t, "NAME", "service/kubernetes", "NAMESPACE", "default", "TYPE", "ClusterIP",
			"CLUSTER-IP", "10.43.0.1", "EXTERNAL-IP", "<none>", "PORT(S)", "443/TCP")
	})

	t.Run("api-resources", func(t *testing.T) {
		tb := parseTable(s.Kubectl(t, "api-resources"))
		tb.expectHeader(t, "NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND")
		for _, want := range apiResources {
			f := strings.Split(want, " ")
			var found bool
			for _, r := range tb.Rows {
				if r[0] == f[0] && r[2] == f[2] {
					found = true
					if strings.Join(r, " ") != want {
						t.Errorf("api-resources row %q, want %q", strings.Join(r, " "), want)
					}
				}
			}
			if !found {
				t.Errorf("api-resources has no %s in %s", f[0], f[2])
			}
		}
		// The "all" category is what `kubectl get all` lists (upstream's set).
		got := strings.Fields(s.Kubectl(t, "api-resources", "--categories=all", "-o", "name"))
		want := []string{"pods", "replicationcontrollers", "services", "daemonsets.apps", "deployments.apps",
			"replicasets.apps", "statefulsets.apps", "horizontalpodautoscalers.autoscaling", "cronjobs.batch", "jobs.batch"}
		if strings.Join(sorted(got), " ") != strings.Join(sorted(want), " ") {
			t.Errorf("category all: %q, want %q", sorted(got), sorted(want))
		}
	})

	t.Run("cluster-info", func(t *testing.T) {
		out := s.Kubectl(t, "cluster-info")
		if want := "Kubernetes control plane is running at " + s.URL(); !strings.Contains(out, want) {
			t.Errorf("cluster-info does not say %q:\n%s", want, out)
		}
	})
}

// apiResources is what upstream `kubectl api-resources` prints for the
// resources orch serves: NAME SHORTNAMES APIVERSION NAMESPACED KIND.
var apiResources = []string{
	"configmaps cm v1 true ConfigMap", "endpoints ep v1 true Endpoints", "events ev v1 true Event",
	"limitranges limits v1 true LimitRange", "namespaces ns v1 false Namespace", "nodes no v1 false Node",
	"persistentvolumeclaims pvc v1 true PersistentVolumeClaim", "persistentvolumes pv v1 false PersistentVolume",
	"pods po v1 true Pod", "podtemplates  v1 true PodTemplate", "replicationcontrollers rc v1 true ReplicationController",
	"resourcequotas quota v1 true ResourceQuota", "secrets  v1 true Secret", "serviceaccounts sa v1 true ServiceAccount",
	"services svc v1 true Service",
	"controllerrevisions  apps/v1 true ControllerRevision", "daemonsets ds apps/v1 true DaemonSet",
	"deployments deploy apps/v1 true Deployment", "replicasets rs apps/v1 true ReplicaSet",
	"statefulsets sts apps/v1 true StatefulSet",
	"horizontalpodautoscalers hpa autoscaling/v2 true HorizontalPodAutoscaler",
	"cronjobs cj batch/v1 true CronJob", "jobs  batch/v1 true Job",
	"leases  coordination.k8s.io/v1 true Lease", "endpointslices  discovery.k8s.io/v1 true EndpointSlice",
	"events ev events.k8s.io/v1 true Event",
	"ingressclasses  networking.k8s.io/v1 false IngressClass", "ingresses ing networking.k8s.io/v1 true Ingress",
	"ipaddresses ip networking.k8s.io/v1 false IPAddress",
	"networkpolicies netpol networking.k8s.io/v1 true NetworkPolicy",
	"servicecidrs  networking.k8s.io/v1 false ServiceCIDR",
	"runtimeclasses  node.k8s.io/v1 false RuntimeClass",
	"poddisruptionbudgets pdb policy/v1 true PodDisruptionBudget",
	"clusterrolebindings  rbac.authorization.k8s.io/v1 false ClusterRoleBinding",
	"clusterroles  rbac.authorization.k8s.io/v1 false ClusterRole",
	"rolebindings  rbac.authorization.k8s.io/v1 true RoleBinding", "roles  rbac.authorization.k8s.io/v1 true Role",
	"deviceclasses  resource.k8s.io/v1 false DeviceClass", "devicetaintrules  resource.k8s.io/v1 false DeviceTaintRule",
	"resourceclaims  resource.k8s.io/v1 true ResourceClaim", "resourceclaimtemplates  resource.k8s.io/v1 true ResourceClaimTemplate",
	"resourceslices  resource.k8s.io/v1 false ResourceSlice",
	"priorityclasses pc scheduling.k8s.io/v1 false PriorityClass",
	"csidrivers  storage.k8s.io/v1 false CSIDriver", "csinodes  storage.k8s.io/v1 false CSINode",
	"csistoragecapacities  storage.k8s.io/v1 true CSIStorageCapacity",
	"storageclasses sc storage.k8s.io/v1 false StorageClass",
	"volumeattachments  storage.k8s.io/v1 false VolumeAttachment",
	"volumeattributesclasses vac storage.k8s.io/v1 false VolumeAttributesClass",
	"storageversionmigrations  storagemigration.k8s.io/v1 false StorageVersionMigration",
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
