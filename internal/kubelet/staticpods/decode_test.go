package staticpods

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

const webYAML = `# the web server
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  containers:
  - name: main
    image: busybox
    command: [httpd, -f]
    ports: [{containerPort: 80}]
    readinessProbe:
      httpGet: {port: 80}
`

const webJSON = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"edge"},
 "spec":{"containers":[{"name":"main","image":"busybox:1.36"}],"restartPolicy":"OnFailure"}}`

func TestParseManifestDefaults(t *testing.T) {
	for _, tc := range []struct {
		name, data, node string
		check            func(t *testing.T, p *corev1.Pod)
	}{
		{name: "yaml", data: webYAML, node: "node-1", check: func(t *testing.T, p *corev1.Pod) {
			want(t, "name", p.Name, "web-node-1")
			want(t, "namespace", p.Namespace, "default")
			want(t, "nodeName", p.Spec.NodeName, "node-1")
			want(t, "phase", string(p.Status.Phase), "Pending")
			want(t, "config.hash", p.Annotations[AnnotationHash], string(p.UID))
			want(t, "config.source", p.Annotations[AnnotationSource], "file")
			want(t, "label", p.Labels["app"], "web")
			want(t, "UID length", len(p.UID), 32)
			want(t, "restartPolicy", string(p.Spec.RestartPolicy), "Always")
			want(t, "dnsPolicy", string(p.Spec.DNSPolicy), "ClusterFirst")
			want(t, "schedulerName", p.Spec.SchedulerName, "default-scheduler")
			want(t, "grace", *p.Spec.TerminationGracePeriodSeconds, int64(30))
			want(t, "enableServiceLinks", *p.Spec.EnableServiceLinks, true)
			want(t, "securityContext set", p.Spec.SecurityContext != nil, true)
			c := p.Spec.Containers[0]
			want(t, "imagePullPolicy", string(c.ImagePullPolicy), "Always")
			want(t, "terminationMessagePath", c.TerminationMessagePath, "/dev/termination-log")
			want(t, "terminationMessagePolicy", string(c.TerminationMessagePolicy), "File")
			want(t, "port protocol", string(c.Ports[0].Protocol), "TCP")
			want(t, "probe period", c.ReadinessProbe.PeriodSeconds, int32(10))
			want(t, "probe path", c.ReadinessProbe.HTTPGet.Path, "/")
			want(t, "tolerations", len(p.Spec.Tolerations), 1)
			want(t, "toleration", p.Spec.Tolerations[0], corev1.Toleration{Operator: "Exists", Effect: "NoExecute"})
		}},
		{name: "json", data: webJSON, node: "node-1", check: func(t *testing.T, p *corev1.Pod) {
			want(t, "key", p.Namespace+"/"+p.Name, "edge/web-node-1")
			want(t, "restartPolicy", string(p.Spec.RestartPolicy), "OnFailure")
			want(t, "imagePullPolicy", string(p.Spec.Containers[0].ImagePullPolicy), "IfNotPresent")
		}},
		{name: "node name lowered in the pod name only", data: webYAML, node: "Node-A", check: func(t *testing.T, p *corev1.Pod) {
			want(t, "name", p.Name, "web-node-a")
			want(t, "nodeName", p.Spec.NodeName, "Node-A")
		}},
		{name: "uid of the manifest kept", data: strings.Replace(webYAML, "name: web\n", "name: web\n  uid: fixed-uid\n", 1), node: "n",
			check: func(t *testing.T, p *corev1.Pod) {
				want(t, "uid", string(p.UID), "fixed-uid")
				want(t, "config.hash", p.Annotations[AnnotationHash], "fixed-uid")
			}},
		{name: "NoExecute toleration replaced, others kept", node: "n",
			data: webYAML + "  tolerations:\n  - {operator: Exists, effect: NoExecute, tolerationSeconds: 5}\n  - {key: k, operator: Exists}\n",
			check: func(t *testing.T, p *corev1.Pod) {
				want(t, "tolerations", len(p.Spec.Tolerations), 2)
				want(t, "replaced", p.Spec.Tolerations[0], corev1.Toleration{Operator: "Exists", Effect: "NoExecute"})
				want(t, "kept", p.Spec.Tolerations[1].Key, "k")
			}},
		{name: "empty documents and comments around the pod", data: "---\n# nothing\n---\n" + webYAML + "---\n", node: "n",
			check: func(t *testing.T, p *corev1.Pod) { want(t, "name", p.Name, "web-n") }},
		{name: "host network ports and requests from limits", node: "n", data: `apiVersion: v1
kind: Pod
metadata: {name: net}
spec:
  hostNetwork: true
  containers:
  - name: c
    image: busybox@sha256:0000000000000000000000000000000000000000000000000000000000000000
    ports: [{containerPort: 53, protocol: UDP}]
    resources: {limits: {cpu: 100m, memory: 64Mi}}
  volumes: [{name: scratch}, {name: host, hostPath: {path: /etc}}]
`, check: func(t *testing.T, p *corev1.Pod) {
			c := p.Spec.Containers[0]
			want(t, "hostPort", c.Ports[0].HostPort, int32(53))
			want(t, "imagePullPolicy by digest", string(c.ImagePullPolicy), "IfNotPresent")
			want(t, "cpu request", c.Resources.Requests.Cpu().String(), "100m")
			want(t, "volume without source", p.Spec.Volumes[0].EmptyDir != nil, true)
			want(t, "hostPath type", *p.Spec.Volumes[1].HostPath.Type, corev1.HostPathUnset)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod, fp, err := parseManifest([]byte(tc.data), "/m/web.yaml", tc.node)
			if err != nil {
				t.Fatal(err)
			}
			if fp == "" {
				t.Error("no fingerprint")
			}
			tc.check(t, pod)
		})
	}
}

func TestParseManifestRefuses(t *testing.T) {
	pod := func(spec string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n" + spec
	}
	container := "  containers: [{name: c, image: busybox}]\n"
	for _, tc := range []struct{ name, data, err string }{
		{"empty", "", "empty"},
		{"only comments", "# nothing here\n---\n", "empty"},
		{"not YAML", "apiVersion: v1\nkind: [\n", "parse YAML"},
		{"scalar", "hello", "not an object"},
		{"two documents", webYAML + "---\n" + webYAML, "more than one YAML document"},
		{"list", `{"apiVersion":"v1","kind":"List","items":[]}`, `kind "List"`},
		{"pod list", `{"apiVersion":"v1","kind":"PodList","items":[]}`, `kind "PodList"`},
		{"deployment", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n", `apiVersion "apps/v1"`},
		{"no kind", "metadata: {name: p}\n", `kind ""`},
		{"unknown field", pod("  containers: [{name: c, image: busybox, comand: [sh]}]\n"), `unknown field "spec.containers[0].comand"`},
		{"duplicate field", pod(container + "  restartPolicy: Never\n  restartPolicy: Always\n"), "restartPolicy"},
		{"no name", "apiVersion: v1\nkind: Pod\nspec:\n" + container, "metadata.name is required"},
		{"bad name", strings.Replace(pod(container), "name: p", "name: Web_1", 1), "metadata.name"},
		{"no containers", pod("  restartPolicy: Never\n"), "at least one container"},
		{"duplicate container", pod("  containers: [{name: c, image: a}, {name: c, image: b}]\n"), "used by another container"},
		{"no image", pod("  containers: [{name: c}]\n"), "an image is required"},
		{"bad restart policy", pod(container + "  restartPolicy: Sometimes\n"), "spec.restartPolicy"},
		{"ephemeral containers", pod(container + "  ephemeralContainers: [{name: e, image: busybox}]\n"), "ephemeral"},
		{"service account", pod(container + "  serviceAccountName: sa\n"), "may not reference serviceaccounts"},
		{"pull secret", pod(container + "  imagePullSecrets: [{name: s}]\n"), "may not reference secrets"},
		{"secret volume", pod(container + "  volumes: [{name: v, secret: {secretName: s}}]\n"), "secrets (via secret volumes)"},
		{"config map env", pod("  containers: [{name: c, image: b, envFrom: [{configMapRef: {name: m}}]}]\n"), "configmaps"},
		{"claim", pod(container + "  volumes: [{name: v, persistentVolumeClaim: {claimName: c}}]\n"), "persistentvolumeclaims"},
		{"token projection", pod(container + "  volumes: [{name: v, projected: {sources: [{serviceAccountToken: {path: t}}]}}]\n"), "serviceaccounts (via projected volumes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod, _, err := parseManifest([]byte(tc.data), "/m/p.yaml", "n")
			if err == nil {
				t.Fatalf("accepted: %+v", pod)
			}
			if !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %q does not mention %q", err, tc.err)
			}
		})
	}
	big := make([]byte, MaxManifestBytes+1)
	if _, _, err := parseManifest(big, "/m/big.yaml", "n"); err == nil || !strings.Contains(err.Error(), "larger") {
		t.Errorf("a manifest over the limit: %v", err)
	}
}

func TestUIDStableAndChanging(t *testing.T) {
	uid := func(data, path, node string) string {
		t.Helper()
		pod, _, err := parseManifest([]byte(data), path, node)
		if err != nil {
			t.Fatal(err)
		}
		return string(pod.UID)
	}
	base := uid(webYAML, "/m/web.yaml", "node-1")
	for _, tc := range []struct {
		name, data, path, node string
		same                   bool
	}{
		{"read again", webYAML, "/m/web.yaml", "node-1", true},
		{"comments and layout only", strings.ReplaceAll(webYAML, "# the web server\n", "") + "\n\n# end\n", "/m/web.yaml", "node-1", true},
		{"as JSON with the same content", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","labels":{"app":"web"}},"spec":{"containers":[
			{"name":"main","image":"busybox","command":["httpd","-f"],"ports":[{"containerPort":80}],"readinessProbe":{"httpGet":{"port":80}}}]}}`,
			"/m/web.yaml", "node-1", true},
		{"explicit defaults", webYAML + "  restartPolicy: Always\n", "/m/web.yaml", "node-1", true},
		{"other image", strings.Replace(webYAML, "image: busybox", "image: busybox:1.36", 1), "/m/web.yaml", "node-1", false},
		{"other label", strings.Replace(webYAML, "app: web", "app: www", 1), "/m/web.yaml", "node-1", false},
		{"other file", webYAML, "/m/web2.yaml", "node-1", false},
		{"other node", webYAML, "/m/web.yaml", "node-2", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := uid(tc.data, tc.path, tc.node); (got == base) != tc.same {
				t.Errorf("UID %s, first read %s: same = %v, want %v", got, base, got == base, tc.same)
			}
		})
	}
}

func want[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}
