package staticpods

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// The annotations of a static pod (and of its mirror), as upstream's.
const (
	// AnnotationHash is the static pod's hash: its UID, unless the
	// manifest sets one.
	AnnotationHash = "kubernetes.io/config.hash"
	// AnnotationSource is where the pod comes from: "file" here, "api" for
	// a pod of the API.
	AnnotationSource = "kubernetes.io/config.source"
	// AnnotationSeen is when the kubelet first saw this version of the pod
	// (RFC 3339, nanoseconds).
	AnnotationSeen = "kubernetes.io/config.seen"
	// AnnotationMirror is on mirror pods only: the hash of the static pod
	// it mirrors.
	AnnotationMirror = corev1.MirrorPodAnnotationKey

	// SourceFile is the source of static pods from manifest files.
	SourceFile = "file"
	// SourceAPI is the source upstream's kubelet gives pods of the API.
	SourceAPI = "api"
)

// MaxManifestBytes is the largest manifest file read (as upstream's).
const MaxManifestBytes = 10 << 20

// seenLayout is upstream's format of config.seen (RFC 3339 with nine
// fixed fractional digits).
const seenLayout = "2006-01-02T15:04:05.000000000Z07:00"

// strict decodes JSON into API objects and refuses unknown and duplicate
// fields; it applies no defaults (client-go's scheme has none).
var strict = kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme.Scheme, scheme.Scheme,
	kjson.SerializerOptions{Strict: true})

// parseManifest decodes the manifest at path (its content data) into the
// static pod node runs: the API's defaults, then the kubelet's (name
// suffix, namespace, UID, node name, annotations but config.seen, the
// NoExecute toleration, phase Pending). fingerprint identifies the
// manifest's pod on this node, whether or not the manifest sets a UID.
func parseManifest(data []byte, path, node string) (pod *corev1.Pod, fingerprint string, err error) {
	doc, err := singleDocument(data)
	if err != nil {
		return nil, "", err
	}
	var meta metav1.TypeMeta
	if err := json.Unmarshal(doc, &meta); err != nil {
		return nil, "", errors.New("the manifest is not an object (want a v1 Pod)")
	}
	if meta.APIVersion != "v1" || meta.Kind != "Pod" {
		return nil, "", fmt.Errorf("the manifest holds apiVersion %q kind %q: want apiVersion v1 kind Pod (one static pod per file)",
			meta.APIVersion, meta.Kind)
	}
	pod = &corev1.Pod{}
	if _, _, err := strict.Decode(doc, nil, pod); err != nil {
		return nil, "", err
	}
	if pod.Name == "" {
		return nil, "", errors.New("metadata.name is required")
	}
	apiDefaults(pod)
	fingerprint, err = hashPod(pod, path, node)
	if err != nil {
		return nil, "", err
	}
	kubeletDefaults(pod, fingerprint, node)
	if err := validate(pod); err != nil {
		return nil, "", err
	}
	return pod, fingerprint, nil
}

// singleDocument is the one YAML (or JSON) document of data, as JSON.
// Documents holding nothing (comments, a bare "---") are skipped; more
// than one is refused rather than reading the first only.
func singleDocument(data []byte) ([]byte, error) {
	if len(data) > MaxManifestBytes {
		return nil, fmt.Errorf("the manifest is larger than %d bytes", MaxManifestBytes)
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var found []byte
	for n := 0; ; {
		chunk, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read the YAML documents: %w", err)
		}
		doc, err := yaml.YAMLToJSONStrict(chunk)
		if err != nil {
			return nil, fmt.Errorf("parse YAML: %w", err)
		}
		if trimmed := bytes.TrimSpace(doc); len(trimmed) == 0 || string(trimmed) == "null" {
			continue
		}
		if n++; n > 1 {
			return nil, errors.New("the manifest holds more than one YAML document: put each static pod in a file of its own")
		}
		found = doc
	}
	if found == nil {
		return nil, errors.New("the manifest is empty")
	}
	return found, nil
}

// hashPod hashes the defaulted pod with the node and the file, as
// upstream's UID of a file's pod: FNV-128a, hex.
func hashPod(pod *corev1.Pod, path, node string) (string, error) {
	data, err := json.Marshal(pod)
	if err != nil {
		return "", fmt.Errorf("encode the pod: %w", err)
	}
	h := fnv.New128a()
	h.Write(data)
	fmt.Fprintf(h, "host:%s", node)
	fmt.Fprintf(h, "file:%s", path)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// kubeletDefaults is upstream's applyDefaults for a file source, plus the
// config.source annotation its pod config adds.
func kubeletDefaults(pod *corev1.Pod, hash, node string) {
	if pod.UID == "" {
		pod.UID = types.UID(hash)
	}
	pod.Name = pod.Name + "-" + strings.ToLower(node)
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	pod.Spec.NodeName = node
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationHash] = string(pod.UID)
	pod.Annotations[AnnotationSource] = SourceFile
	tolerateNoExecute(pod)
	pod.Status.Phase = corev1.PodPending
}

// tolerateNoExecute makes the pod tolerate every NoExecute taint, so node
// problems never evict it: the toleration replaces one that matches it
// (same key, operator, value and effect) or is added.
func tolerateNoExecute(pod *corev1.Pod) {
	all := corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}
	for i, t := range pod.Spec.Tolerations {
		if t.Key == all.Key && t.Operator == all.Operator && t.Value == all.Value && t.Effect == all.Effect {
			pod.Spec.Tolerations[i] = all
			return
		}
	}
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, all)
}

// seen is the config.seen value of t.
func seen(t time.Time) string { return t.Format(seenLayout) }
