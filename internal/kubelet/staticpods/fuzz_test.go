package staticpods

import (
	"strings"
	"testing"
)

func FuzzParseManifest(f *testing.F) {
	for _, seed := range []string{
		webYAML, webJSON, "", "---\n", "kind: [", "hello", webYAML + "---\n" + webYAML,
		`{"apiVersion":"v1","kind":"List","items":[]}`,
		podYAML("a", "busybox") + "  volumes: [{name: v}, {name: s, secret: {secretName: x}}]\n",
		podYAML("a", "busybox") + "  hostNetwork: true\n  tolerations: [{operator: Exists, effect: NoExecute}]\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pod, fingerprint, err := parseManifest(data, "/m/f.yaml", "node-1")
		if err != nil {
			if pod != nil {
				t.Fatalf("a pod and an error: %v", err)
			}
			return
		}
		if !strings.HasSuffix(pod.Name, "-node-1") || pod.Namespace == "" || pod.UID == "" || pod.Spec.NodeName != "node-1" {
			t.Fatalf("kubelet defaults missing: %s/%s uid %q node %q", pod.Namespace, pod.Name, pod.UID, pod.Spec.NodeName)
		}
		if pod.Annotations[AnnotationHash] != string(pod.UID) || pod.Annotations[AnnotationSource] != SourceFile {
			t.Fatalf("annotations %v", pod.Annotations)
		}
		if err := validate(pod); err != nil {
			t.Fatalf("accepted an invalid pod: %v", err)
		}
		again, fingerprint2, err := parseManifest(data, "/m/f.yaml", "node-1")
		if err != nil || again.UID != pod.UID || fingerprint2 != fingerprint {
			t.Fatalf("a second read differs: %v, UID %s then %s", err, pod.UID, again.UID)
		}
	})
}
